"""Do the step's phases agree with a profiler capture of the same steps? (run by hand; issue 25)

    PYTHONPATH=. .venv/bin/python bench/phase_agreement.py [RECIPE] [--steps N] [--set K=V ...]
    PYTHONPATH=. .venv/bin/python bench/phase_agreement.py --session DIR

Runs ``tuimon RECIPE --headless --modes eager,default`` with a profiler capture of 20 steps in
each run (``--profile-at``), or reads a session already recorded. A captured step carries both
the phases tuimon measures on every step (their marks) and the capture's own split of the same
steps (its labels: data, forward, backward, optimizer); for each run it prints the two per
phase (means over the captured steps, ms), and for the compiled run against eager each phase's
speedup three ways: from the phases of the captured steps, from the captures' splits, and from
the phases of the steady state (the summary's, with its interval).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.append(str(ROOT))

from tuimon.analysis import load_session  # noqa: E402

PARTS = ("data", "forward", "backward", "optimizer")


def run_session(recipe: str, steps: int, sets: list[str], out: Path) -> Path:
    at = max(30, steps // 2)
    cmd = [sys.executable, "-m", "tuimon", recipe, "--headless", "--modes", "eager,default",
           "--steps", str(steps), "--repeats", "1", "--profile-at", str(at),
           "--profile-window", "1,2,20", "--out", str(out)]
    for s in sets:
        cmd += ["--set", s]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return sorted(out.iterdir())[-1]


def captured(evs: list[dict], run: str) -> tuple[dict, dict] | None:
    """(the phases' means over the active steps of the run's first capture, that capture's
    split of the same steps)."""
    cap = next((e for e in evs if e["type"] == "profile" and e.get("run") == run
                and e.get("state") == "done" and e.get("split")), None)
    if cap is None:
        return None
    # The capture's active steps only: its warmup steps are recorded (kept out of the steady
    # state) but not in its split, and the profiler's start makes them slow.
    active = set(cap.get("active_steps") or ())
    steps = [e for e in evs if e["type"] == "step" and e.get("run") == run and e["i"] in active
             and e.get("profiled") == cap["capture"] and e.get("ph") and None not in e["ph"]]
    if not steps:
        return None
    mine = {p: statistics.fmean(s["ph"][k] / 1000.0 for s in steps) for k, p in enumerate(PARTS)}
    mine["step"] = statistics.fmean(s["ms"] for s in steps)
    theirs = {p: cap["split"][f"{p}_ms"] for p in PARTS} | {"step": cap["split"]["step_ms"]}
    return mine, theirs


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("recipe", nargs="?", default=str(ROOT / "recipes" / "tiny_mlp.py"))
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--set", action="append", default=[])
    p.add_argument("--session")
    a = p.parse_args()
    if a.session:
        session = Path(a.session)
    else:
        session = run_session(a.recipe, a.steps, a.set, Path(tempfile.mkdtemp(prefix="tuimon-agree-")))
    _, evs, summary = load_session(session)
    rows = {r.mode: r for r in summary.runs}
    found = {mode: captured(evs, r.run) for mode, r in rows.items()}
    print(f"session {session}")
    for mode, pair in found.items():
        if pair is None:
            print(f"{mode}: no capture with phases")
            continue
        mine, theirs = pair
        print(f"{mode}: phases / capture, ms a step over the captured steps")
        for part in (*PARTS, "step"):
            diff = (mine[part] / theirs[part] - 1) * 100 if theirs[part] else float("nan")
            print(f"  {part:9} {mine[part]:9.4f} {theirs[part]:9.4f}  {diff:+6.1f} %")
    if found.get("eager") and found.get("default"):
        (e_mine, e_cap), (c_mine, c_cap) = found["eager"], found["default"]
        steady = rows["default"].phases.step_phases
        print("default vs eager, speedup per phase: phases (captured steps) / capture / phases "
              "(steady state, 95 % CI)")
        for part in PARTS:
            a_ = e_mine[part] / c_mine[part] if c_mine[part] else float("nan")
            b_ = e_cap[part] / c_cap[part] if c_cap[part] else float("nan")
            s = steady.get(part, {})
            ci = (f"{s['speedup']:.2f} ({s['speedup_lo']:.2f}–{s['speedup_hi']:.2f})"
                  if s.get("speedup_lo") is not None else "–")
            print(f"  {part:9} {a_:6.2f}  {b_:6.2f}  ({(a_ / b_ - 1) * 100:+5.1f} %)   {ci}")


if __name__ == "__main__":
    main()
