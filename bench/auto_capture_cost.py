"""What the automatic diagnosis capture costs a session (run by hand).

Runs each case as a real headless session, with the automatic capture (the default) and with
``--no-auto-capture``, interleaved, and reads the cost back from the session's events:
- at the boundaries: ``finished.profile_s`` (starting the profiler, stopping it, reading its
  events and building the tables; outside every step time and kept out of --duration);
- inside the recorded steps: each one's time minus the run's steady median (the profiler slows
  the 3 steps it records, which are kept out of the steady state);
- the window's size (events) and the session's wall time with and without (noisy on a shared
  machine: the per-run figures above are the measurement, the wall times a sanity check).

.venv/bin/python bench/auto_capture_cost.py [ROUNDS]
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tuimon.report import schema

ROOT = Path(__file__).resolve().parent.parent
CASES = {
    "tiny_mlp eager,default 100 steps": ["recipes/tiny_mlp.py", "--modes", "eager,default", "--steps", "100"],
    "vit_patchdrop eager 40 steps": ["recipes/vit_patchdrop.py", "--modes", "eager", "--steps", "40"],
}


def session(args: list[str], out: Path, cache: Path, auto: bool) -> tuple[float, dict[str, dict]]:
    cmd = [sys.executable, "-m", "tuimon", *args, "--headless", "--out", str(out), "--cache-dir", str(cache)]
    if not auto:
        cmd.append("--no-auto-capture")
    t0 = time.perf_counter()
    subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=True)
    wall = time.perf_counter() - t0
    path = max(out.iterdir(), key=lambda p: p.stat().st_mtime)
    summary = schema.read(path / "summary.json")
    evs = [json.loads(line) for line in (path / "events.jsonl").read_text().splitlines() if line.strip()]
    runs = {}
    for r in summary["runs"]:
        mine = [e for e in evs if e.get("run") == r["run"]]
        finished = next(e for e in mine if e["type"] == "finished")
        steps = [e for e in mine if e["type"] == "step" and e.get("profiled")]
        captures = [e for e in mine if e["type"] == "profile" and e.get("state") in ("done", "failed")]
        capture = next((e for e in captures if e["state"] == "done"), {})
        median = r["timing"]["median_ms"]
        runs[r["run"]] = {
            "boundary_s": finished.get("profile_s") or 0.0,
            "in_steps_s": sum(s["ms"] - median for s in steps) / 1000.0 if median else 0.0,
            "run_s": finished.get("seconds") or 0.0,
            "events": (capture.get("cost") or {}).get("events") or 0,
            "captures": ", ".join(("partial" if e.get("partial") else e["state"]) for e in captures),
            "median_ms": median,
        }
    return wall, runs


def main(rounds: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        cache = Path(tmp) / "cache"
        for name, args in CASES.items():
            session(args, Path(tmp) / "warm-up", cache, False)  # fill the Inductor cache first
            walls: dict[bool, list[float]] = {True: [], False: []}
            runs: dict[str, list[dict]] = {}
            for i in range(rounds):
                for auto in (True, False):
                    wall, found = session(args, Path(tmp) / f"{name}-{i}-{auto}", cache, auto)
                    walls[auto].append(wall)
                    if auto:
                        for run, figures in found.items():
                            runs.setdefault(run, []).append(figures)
            print(f"{name}:")
            for run, figures in runs.items():
                def med(key: str, fig=figures) -> float:
                    return statistics.median(f[key] for f in fig)
                cost = med("boundary_s") + med("in_steps_s")
                print(f"  {run}: boundaries {med('boundary_s') * 1000:.0f} ms + recorded steps "
                      f"{med('in_steps_s') * 1000:.0f} ms = {cost * 1000:.0f} ms "
                      f"({cost / med('run_s'):.1%} of its {med('run_s'):.1f} s run); "
                      f"{med('events'):.0f} events; median step {med('median_ms'):.2f} ms; captures: "
                      f"{' / '.join(f['captures'] for f in figures)}")
            print(f"  session wall time: {statistics.median(walls[True]):.1f} s with, "
                  f"{statistics.median(walls[False]):.1f} s without "
                  f"({', '.join(f'{w:.1f}' for w in walls[True])} / "
                  f"{', '.join(f'{w:.1f}' for w in walls[False])})")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 2)
