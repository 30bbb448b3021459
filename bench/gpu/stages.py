"""The GPU programme's stages (issue 27): what each `bash bench/gpu/all.sh STAGE` runs, in order.

A stage fits one call of the device tool (≤ 600 s): set-up, then its steps, each under its own
time limit, within the stage's budget. Stages are listed in the order a lease should run them
(the most wanted first); bench/gpu/README.md gives each one's expected duration.

A step is data: its command, its time limit, what it shows, how its result is read (``collect``)
and what the dry run does with it (``dry``: "run" its ``dry_argv`` on the CPU, tiny, or "check"
the command without running it). Nothing here runs anything.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

MODELS = ("swin_t", "swin_b", "convnext_l")  # the seed's table (docs/FIELD.md)
ALWAYS = "always"


@dataclass
class Step:
    name: str  # unique in its stage, a file name
    argv: list[str]
    timeout_s: float  # its own limit: SIGINT (tuimon summarises what it measured), then SIGKILL
    what: str  # one line: the claim it measures
    collect: str = "none"  # none | facts | json | doctor | junit | session | screens
    env: dict[str, str] = field(default_factory=dict)
    ok_codes: tuple[int, ...] = (0,)
    needs: str = ALWAYS  # always | gpus>=2 | feature:warm | feature:phases | no-session | no-facts
    dry: str = "check"  # in --dry-run: "run" (dry_argv, or argv) or "check" (argv checked only)
    dry_argv: list[str] | None = None
    artifact: Path | None = None  # a file the step writes (json, junit, stdout)
    stdout_to: Path | None = None  # the step's stdout goes here instead of its log
    min_s: float = 30.0  # below this much time left in the stage, it is not started
    # Sized to the time left: its argv for the limit it gets (argv: its command without a length;
    # the dry run checks the sized one and runs dry_argv), that limit being what is left less
    # ``leave_s``, kept for the steps after it
    sized: Callable[[float], list[str]] | None = None
    leave_s: float = 0.0


@dataclass
class Ctx:
    root: Path  # the repository (the device tool's working tree)
    work: Path  # scratch on the machine: sessions, logs, artifacts
    py: str  # the interpreter (python3 on the device, this venv in the dry run)
    stage: str
    dry: bool = False

    def tuimon(self, *args: str) -> list[str]:
        return [self.py, "-m", "tuimon", *args]

    def dir(self, *parts: str) -> Path:
        return self.work / self.stage / Path(*parts)

    def sessions(self, step: str) -> Path:
        return self.work / "sessions" / self.stage / step

    def session(self, name: str, recipe: str, *flags: str, timeout_s: float, what: str,
                device: str = "cuda", **kw) -> Step:
        """A headless tuimon session on ``device`` whose sessions go to their own folder."""
        argv = self.tuimon(recipe, "--headless", "--device", device, "--out",
                           str(self.sessions(name)), *flags)
        return Step(name, argv, timeout_s, what, collect="session", **kw)

    def tiny(self, name: str, *flags: str) -> list[str]:
        """The dry run's stand-in for a session: tiny_mlp on the CPU, a few steps."""
        return self.tuimon(str(self.root / "recipes/tiny_mlp.py"), "--headless", "--device", "cpu",
                           "--out", str(self.sessions(name)), "--steps", "30", "--no-auto-capture",
                           *flags)


def facts(c: Ctx, timeout_s: float = 120) -> Step:
    """Once a machine: a later stage on the same (warm) machine reads the file again."""
    out = c.work / "facts.json"
    return Step("facts", [c.py, str(c.root / "bench/gpu/facts.py"), "--json", str(out)], timeout_s,
                "the machine: GPUs, driver, torch, CUDA, cuDNN, Triton, Python, the carried packages",
                collect="json", artifact=out, needs="no-facts", dry="run", min_s=10)


def doctor(c: Ctx, timeout_s: float, dry: str = "check") -> Step:
    return Step("doctor", c.tuimon("doctor", "--format", "json"), timeout_s,
                "tuimon doctor on a GPU: CUDA, NVML, Triton lines", collect="doctor",
                stdout_to=c.dir("doctor.json"), min_s=10, dry=dry)


def check(c: Ctx) -> list[Step]:
    r = c.root
    junit = c.dir("junit-cuda.xml")
    tests = ["tests/e2e/test_cuda_syncs.py", "tests/unit/test_probes_gpu.py", "tests/unit/test_doctor.py",
             "tests/e2e/test_bad_input.py::test_cuda_requested_without_cuda",
             "tests/e2e/test_ranks.py::test_the_ddp_script_on_two_gpus_with_nccl",
             "tests/e2e/test_flops_cuda.py", "tests/unit/test_flops_stats.py"]
    pytest = [c.py, "-m", "pytest", "-q", "-rA", "-p", "no:cacheprovider", "--junitxml", str(junit)]
    nvml, trust = c.dir("nvml.json"), c.dir("trust.json")
    return [
        facts(c),
        doctor(c, 120),
        Step("cuda-tests", [*pytest, *tests], 330,
             "the CUDA tests unskipped: zero added syncs (TUIMON_SYNC_DEBUG=error) on a recipe and a "
             "script, the NVML probe against a real NVML, doctor, --device cuda:99; FLOPs: the "
             "measured GEMM peak against the datasheet's, precision read off the ops, MFU on swin_t",
             collect="junit", env={"TUIMON_SYNC_DEBUG": "error"}, artifact=junit, dry="run",
             dry_argv=[*pytest, "tests/unit/test_probes_gpu.py::test_full_device_sample"], min_s=60),
        Step("nvml", [c.py, str(r / "bench/gpu/nvml_check.py"), "--json", str(nvml), "--seconds", "12"],
             120, "NVML for real: every metric under load, the load's own VRAM, the probe's cost per "
             "sample", collect="json", artifact=nvml, dry="run",
             dry_argv=[c.py, str(r / "bench/gpu/nvml_check.py"), "--json", str(nvml), "--seconds",
                       "1", "--samples", "10", "--device", "none"]),
        Step("trust", [c.py, str(r / "bench/trust.py"), "--device", "cuda", "--overhead-only", "--runs",
                       "3", "--json", str(trust)], 240,
             "tuimon's overhead at ~1 ms and ~10 ms GPU steps (≤ 2 % and ≤ 0.5 %)", collect="json",
             artifact=trust, min_s=90),
        c.session("memory-energy", str(r / "recipes/tiny_mlp.py"), "--modes",
                  "eager,default,reduce-overhead", "--schedule", "sequential", "--steps", "20000",
                  "--duration", "6", "--interval", "0.2", "--no-auto-capture", timeout_s=150,
                  min_s=60, dry="run",
                  dry_argv=c.tiny("memory-energy", "--modes", "eager", "--interval", "0.2"),
                  what="issue 35: memory per phase, compile against eager, the CUDA-graph pool, the "
                       "batch that fits; joules per step and run from NVML's counter, each alone"),
        c.session("oom", str(r / "recipes/convnext_l.py"), "--modes", "eager", "--batch-size", "512",
                  "--steps", "3", "--no-auto-capture", timeout_s=180, ok_codes=(1,),
                  what="an out-of-memory step named, with the allocator's peaks"),
        c.session("nccl", str(r / "recipes/tiny_mlp.py"), "--nproc", "2", "--modes", "eager,default",
                  "--steps", "500", timeout_s=240, needs="gpus>=2",
                  what="a 2-rank nccl job (--nproc 2), one GPU a rank"),
    ]


def table(c: Ctx, precision: str, steps: int, timeouts: tuple[int, ...], dry_first: bool) -> list[Step]:
    """The seed's table, eager vs default: one session a model, the variants one after the other
    (a large model's variants do not fit on one GPU together)."""
    out = [facts(c)]
    for k, (model, limit) in enumerate(zip(MODELS, timeouts, strict=True)):
        out.append(c.session(
            model, str(c.root / f"recipes/{model}.py"), "--modes", "eager,default", "--precision",
            precision, "--schedule", "sequential", "--steps", str(steps), timeout_s=limit,
            what=f"the seed's table: {model}, eager vs default, {precision}", min_s=90,
            dry="run" if dry_first and k == 0 else "check",
            dry_argv=c.tiny(model, "--modes", "eager", "--precision", precision)))
    return out


def modes(c: Ctx, precision: str = "amp") -> list[Step]:
    """The seed's table, the CUDA-graph modes: reduce-overhead and max-autotune against eager."""
    return [facts(c)] + [
        c.session(model, str(c.root / f"recipes/{model}.py"), "--modes",
                  "eager,reduce-overhead,max-autotune", "--precision", precision, "--schedule",
                  "sequential", "--steps", "150", timeout_s=limit, min_s=120,
                  what=f"the seed's table: {model}, reduce-overhead and max-autotune, {precision}")
        for model, limit in zip(MODELS, (240, 300, 300), strict=True)]


def extras(c: Ctx) -> list[Step]:
    r = c.root
    shots = c.dir("shots")
    return [
        facts(c),
        c.session("cudagraphs", str(r / "recipes/tiny_mlp.py"), "--modes",
                  "eager,default,reduce-overhead", "--steps", "3000", "--duration", "60",
                  timeout_s=240, what="CUDA graphs seen: reduce-overhead on a launch-bound model"),
        Step("screenshots", [c.py, str(r / "screenshots/make_screenshots.py"), "--only", "gpu",
                             "--device", "cuda", "--recipe", str(r / "recipes/swin_t.py"), "--dest",
                             str(shots), "--sessions", str(c.sessions("screenshots")), "--max-wait",
                             "200"], 300,
             "GPU screenshots for README: the panels with GPU rows, the overlay with GPU util",
             collect="screens", artifact=shots, min_s=120),
        c.session("cudagraph-skip", str(r / "bench/gpu/recipes/cudagraph_skip.py"), "--modes",
                  "reduce-overhead", "--steps", "200", timeout_s=180,
                  what="a skipped-CUDA-graphs reason read (a forward that mutates its input)"),
        c.session("syncs-recipe", str(r / "recipes/autoencoder.py"), "--modes", "eager,default",
                  "--precision", "fp32,amp", "--steps", "300", "--warmup", "20", timeout_s=240,
                  env={"TUIMON_SYNC_DEBUG": "error"},
                  what="zero added syncs on another recipe, fp32 and amp (TUIMON_SYNC_DEBUG=error)"),
    ]


def try_fixes(c: Ctx) -> list[Step]:
    """Issue 34 on CUDA: tuimon try's GPU-only fixes for real (tf32, reduce-overhead,
    no-cudagraphs, max-autotune on a recipe; the loader's pinned memory and tf32 on a script),
    each raced against the variant without it (the fix axis, as tuimon try runs it), and the
    fake-CUDA tests of the same fixes on a real one."""
    r = c.root
    pytest = [c.py, "-m", "pytest", "-q", "-rA", "-p", "no:cacheprovider"]
    return [
        facts(c),
        Step("try-cuda-tests", [*pytest, "tests/unit/test_fixes_cuda.py"], 90,
             "the GPU-only fixes apply where CUDA is there and refuse where not (fake CUDA, on a GPU)",
             min_s=30),  # the dry run checks it only: the unit suite runs it on every machine
        c.session("try-recipe", str(r / "recipes/tiny_mlp.py"), "--modes", "eager,default",
                  "--precision", "fp32", "--set", "fix=none,tf32,reduce-overhead,no-cudagraphs",
                  "--steps", "2000", timeout_s=240, min_s=120,
                  what="tf32, reduce-overhead and no-cudagraphs raced on CUDA (a launch-bound model)"),
        Step("try-script", c.tuimon("run", "--headless", "--modes", "eager,default", "--set",
                                    "fix=none,loader,tf32", "--steps", "300", "--out",
                                    str(c.sessions("try-script")), "--", c.py,
                                    str(r / "tests/scripts/amp_scaler.py")), 180,
             "the loader's pinned memory and workers, and tf32, on an unmodified script on CUDA",
             collect="session", min_s=90),
        c.session("try-autotune", str(r / "recipes/tiny_mlp.py"), "--modes", "eager,default",
                  "--precision", "fp32", "--set", "fix=none,max-autotune", "--steps", "1000",
                  timeout_s=240, min_s=120,
                  what="max-autotune raced on CUDA: its cold compile (kernels benchmarked) and step"),
    ]


def phases(c: Ctx) -> list[Step]:
    """Issue 25 (step phases), measured once the build has them: a recipe and a script on CUDA."""
    r = c.root
    return [
        facts(c),
        c.session("phases-probe", str(r / "recipes/tiny_mlp.py"), "--modes", "eager", "--steps",
                  "30", "--no-auto-capture", device="cpu", timeout_s=120, needs="no-session",
                  what="does this build write phase fields? (a CPU session, when none is at hand)"),
        c.session("phases-recipe", str(r / "recipes/swin_t.py"), "--modes", "eager,default",
                  "--precision", "amp", "--steps", "200", timeout_s=240, needs="feature:phases",
                  what="phases on CUDA: data · fwd · bwd · opt per step, compile's speedup per phase"),
        Step("phases-script", c.tuimon("run", "--headless", "--modes", "eager,default", "--steps", "300",
                                       "--out", str(c.sessions("phases-script")), "--", c.py,
                                       str(r / "tests/scripts/amp_scaler.py")), 180,
             "phases of an unmodified script on CUDA", collect="session", needs="feature:phases"),
    ]


def warm(c: Ctx) -> list[Step]:
    """Issue 26 (warm start), measured once the build has --warm: Triton kernels and CUDA graphs."""
    r = c.root
    return [
        facts(c),
        c.session("warm-recipe", str(r / "recipes/swin_t.py"), "--warm", "--modes",
                  "eager,default,reduce-overhead", "--precision", "amp", "--steps", "150",
                  timeout_s=330, needs="feature:warm",
                  what="cold vs warm compile on CUDA (Triton kernels, CUDA graphs): --warm"),
        Step("warm-script", c.tuimon("run", "--headless", "--warm", "--modes", "eager,default", "--steps",
                                     "200", "--out", str(c.sessions("warm-script")), "--", c.py,
                                     str(r / "tests/scripts/amp_scaler.py")), 180,
             "cold vs warm compile of an unmodified script on CUDA", collect="session",
             needs="feature:warm"),
    ]


def suite(c: Ctx) -> list[Step]:
    """The whole test suite on the GPU box, in parallel, then its failures one at a time."""
    junit, again = c.dir("junit-suite.xml"), c.dir("junit-rerun.xml")
    base = [c.py, "-m", "pytest", "-q", "-rfs", "-o", f"cache_dir={c.dir('pytest-cache')}"]
    return [facts(c),
            Step("suite", [*base, "-n", "8", "--junitxml", str(junit)], 330,
                 "the whole suite on a GPU, 8 workers", collect="junit", artifact=junit, min_s=120),
            Step("suite-rerun", [*base, "--lf", "--junitxml", str(again)], 200,
                 "the parallel run's failures again, one at a time", collect="junit", artifact=again,
                 min_s=60)]


from essential import CALL_S, essential  # noqa: E402 - its steps use the helpers above

# name -> (steps, what, expected seconds on an H100: estimates until a run replaces them)
STAGES = {
    # The one prepared call a freshly lent device gets first (15 min in all, start included, at
    # most 10 a command: DEVELOPERS.md): the seed's question first, then what only a GPU can tell
    "essential": (essential, "facts, doctor, the seed's question on swin_t (amp), zero syncs, CUDA "
                  "graphs, a script on CUDA, overhead at ~1 ms, a live screenshot", CALL_S),
    "check": (check, "set-up, doctor, the CUDA tests, NVML, memory per phase and energy, overhead, "
              "an OOM (2 GPUs: nccl)", 450),
    "amp": (lambda c: table(c, "amp", 200, (200, 240, 280), True),
            "the seed's table in amp: swin_t, swin_b, convnext_l × eager / default", 420),
    "fp32": (lambda c: table(c, "fp32", 120, (200, 240, 280), False),
             "the seed's table in fp32: swin_t, swin_b, convnext_l × eager / default", 480),
    "modes": (modes, "reduce-overhead and max-autotune (amp) for the three models", 570),
    "modes-fp32": (lambda c: modes(c, "fp32"), "reduce-overhead and max-autotune in fp32", 570),
    "extras": (extras, "CUDA graphs seen and skipped, syncs on another recipe, GPU screenshots", 380),
    "try": (try_fixes, "issue 34: tuimon try's GPU-only fixes raced on CUDA", 480),
    "phases": (phases, "issue 25: step phases on CUDA (when the build has them)", 300),
    "warm": (warm, "issue 26: cold vs warm compile on CUDA (when the build has --warm)", 420),
    "suite": (suite, "the whole test suite (optional)", 540),
}
ORDER = list(STAGES)
# Seconds a stage's call may take, set-up included (bench/gpu/all.sh passes what set-up spent)
CALL_DEFAULT_S = 570
CALLS_S = {"essential": CALL_S}
