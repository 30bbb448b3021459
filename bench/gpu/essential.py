"""The GPU programme's essential stage (issue 43): the first call a lent device gets, perhaps its
only one. One call of at most CALL_S seconds, the wheels' install included, brings back, in this
order so that a call cut short keeps the most important:

  1. the machine's facts and ``tuimon doctor``;
  2. the seed's question on one model: swin_t eager against default in amp, its length sized to
     the time left (``seed_plan``): speedup with its interval, compile by phase, break-even,
     VRAM, memory and FLOPs per phase, MFU against both peaks, NVML under load;
  3. zero syncs added per step (tests/e2e/test_cuda_syncs.py under TUIMON_SYNC_DEBUG=error);
  4. reduce-overhead on tiny_mlp: CUDA graphs seen, their launches a step counted;
  5. one unmodified script on CUDA: its step phases, its files kept apart;
  6. tuimon's overhead at ~1 ms GPU steps;
  7. one screenshot of the live TUI on the GPU.

Data only, as stages.py: the steps, their limits, and the seed session's length for a limit.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tuimon.lengths import full_for

if TYPE_CHECKING:
    from stages import Ctx, Step

CALL_S = 540  # the call, set-up included: 9 of the device tool's 10 minutes
SEED_MODEL = "swin_t"
# What the steps after the seed's usually take on an H100 (estimates until a run's JSON replaces
# them): the seed keeps their sum for them, so a typical call runs all seven.
EXPECT_S = {"syncs": 70, "cudagraphs": 35, "script": 40, "overhead": 50, "screenshot": 45}
# The seed session's fixed costs (estimates): both processes' start-up with the FLOP count and the
# peak measured, and the summary; swin_t default/amp's cold compile; a second round's start-up
# and warm compile.
SEED_START_S, SEED_COLD_S, SEED_WARM_S = 40.0, 75.0, 45.0
SEED_MARGIN = 0.85  # the session ends before its limit: a SIGINT at the limit costs its grace
SEED_MIN_S = 10.0  # the shortest stepping a variant is given
SEED_SPREAD_S = 20.0  # round 1's stepping a second round needs to be worth its warm compile


def seed_plan(limit_s: float) -> tuple[int, float]:
    """(processes a variant, seconds round 1's process steps) for a seed session that must end
    within ``limit_s``: two rounds when there is room (the spread between processes then goes
    into the speedup's interval), else one; the stepping is what the fixed costs leave."""
    def stepping(repeats: int) -> float:
        fixed = SEED_START_S + SEED_COLD_S + (repeats - 1) * SEED_WARM_S
        return full_for((limit_s * SEED_MARGIN - fixed) / 2, repeats)  # two variants share the rest

    repeats = 2 if stepping(2) >= SEED_SPREAD_S else 1
    return repeats, round(max(SEED_MIN_S, stepping(repeats)), 1)


def seed(c: Ctx) -> Step:
    from stages import Step  # stages.py lists this stage: imported when it runs, never in a cycle

    base = c.tuimon(str(c.root / f"recipes/{SEED_MODEL}.py"), "--headless", "--device", "cuda", "--out",
                    str(c.sessions("seed")), "--modes", "eager,default", "--precision", "amp")

    def sized(limit_s: float) -> list[str]:
        repeats, seconds = seed_plan(limit_s)
        return [*base, "--repeats", str(repeats), "--duration", f"{seconds:g}", "--steps", "1000000"]

    return Step("seed", base, 300, f"the seed's question: {SEED_MODEL} eager vs default (amp): speedup "
                "and interval, compile by phase, break-even, VRAM, memory and FLOPs per phase, MFU, NVML",
                collect="session", min_s=120, dry="run",
                dry_argv=c.tiny("seed", "--modes", "eager", "--precision", "amp", "--repeats", "1"),
                sized=sized, leave_s=sum(EXPECT_S.values()))


def essential(c: Ctx) -> list[Step]:
    from stages import Step, doctor, facts

    r = c.root
    junit, trust, shots = c.dir("junit-syncs.xml"), c.dir("trust.json"), c.dir("shots")
    pytest = [c.py, "-m", "pytest", "-q", "-rA", "-p", "no:cacheprovider", "--junitxml", str(junit)]
    script = str(r / "bench/gpu/scripts/train_cuda.py")
    run_script = ["run", "--headless", "--repeats", "1", "--out", str(c.sessions("script"))]
    overhead = [c.py, str(r / "bench/trust.py"), "--overhead-only", "--ms", "1", "--json", str(trust)]
    shot = [c.py, str(r / "screenshots/make_screenshots.py"), "--only", "gpu", "--one", "--recipe",
            str(r / "recipes/tiny_mlp.py"), "--dest", str(shots), "--sessions", str(c.sessions("screenshot"))]
    return [
        facts(c, 60),
        doctor(c, 60, dry="run"),
        seed(c),
        Step("syncs", [*pytest, "tests/e2e/test_cuda_syncs.py"], 120,
             "zero syncs added per step: a recipe, a script, the guard's control "
             "(TUIMON_SYNC_DEBUG=error)", collect="junit", env={"TUIMON_SYNC_DEBUG": "error"},
             artifact=junit, min_s=45, dry="run", dry_argv=[*pytest, "tests/unit/test_syncdebug.py"]),
        c.session("cudagraphs", str(r / "recipes/tiny_mlp.py"), "--modes", "eager,reduce-overhead",
                  "--repeats", "1", "--steps", "5000", "--duration", "10", timeout_s=75, min_s=40,
                  dry="run", dry_argv=c.tiny("cudagraphs", "--modes", "eager", "--repeats", "1"),
                  what="reduce-overhead on a launch-bound recipe: CUDA graphs seen, launches a step"),
        Step("script", c.tuimon(*run_script, "--modes", "eager,default", "--steps", "300", "--", c.py,
                                script), 90,
             "an unmodified script on CUDA: step phases, each variant's files kept apart",
             collect="session", min_s=45, dry="run",
             dry_argv=c.tuimon(*run_script, "--modes", "eager", "--steps", "40", "--no-auto-capture", "--",
                               c.py, script)),
        Step("overhead", [*overhead, "--device", "cuda", "--runs", "3"], 75,
             "tuimon's overhead at ~1 ms GPU steps (≤ 2 %)", collect="json", artifact=trust, min_s=40,
             dry="run", dry_argv=[*overhead, "--device", "cpu", "--runs", "1", "--blocks", "1"]),
        Step("screenshot", [*shot, "--device", "cuda", "--precision", "amp", "--max-wait", "45"], 90,
             "the live TUI on the GPU: the panels with their GPU rows (160x45)", collect="screens",
             artifact=shots, min_s=40, dry="run",
             dry_argv=[*shot, "--device", "cpu", "--precision", "fp32", "--max-wait", "4"]),
    ]
