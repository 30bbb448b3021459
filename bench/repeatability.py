"""Repeatability (run by hand): the same session several times; does each speedup fall inside
the other sessions' reported intervals?

    .venv/bin/python bench/repeatability.py [STEPS] [SCHEDULE] [REPEATS] [SESSIONS] [RECIPE]

REPEATS > 1 runs each variant in that many processes (--repeats) and reads the combined row.
"""

from __future__ import annotations

import itertools
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tuimon.report import schema

ROOT = Path(__file__).resolve().parent.parent


def session(out: Path, cache: Path, recipe: str, steps: int, schedule: str, repeats: int) -> dict:
    subprocess.run([str(ROOT / ".venv/bin/tuimon"), str(ROOT / "recipes" / f"{recipe}.py"), "--headless",
                    "--modes", "eager,default", "--steps", str(steps), "--schedule", schedule,
                    "--repeats", str(repeats), "--cache-dir", str(cache), "--out", str(out),
                    "--no-probes"], check=True, capture_output=True)
    path = sorted(out.iterdir())[-1]
    summary = schema.read(path / "summary.json")
    rows = summary["variants"] if repeats > 1 else summary["runs"]
    return next(r for r in rows if r["mode"] == "default")


if __name__ == "__main__":
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 3000
    schedule = sys.argv[2] if len(sys.argv) > 2 else "interleave"
    repeats = int(sys.argv[3]) if len(sys.argv) > 3 else 1
    n = int(sys.argv[4]) if len(sys.argv) > 4 else 2
    recipe = sys.argv[5] if len(sys.argv) > 5 else "tiny_mlp"
    with tempfile.TemporaryDirectory() as tmp:
        cache = Path(tmp) / "cache"
        session(Path(tmp) / "warm-up", cache, recipe, 50, schedule, 1)  # fill the Inductor cache first
        started = time.monotonic()
        results = [session(Path(tmp) / f"s{i}", cache, recipe, steps, schedule, repeats) for i in range(n)]
        seconds = (time.monotonic() - started) / n
    for i, r in enumerate(results, 1):
        per = " · ".join(f"{p['median_ms']:.3f}" for p in r.get("processes") or [] if p["median_ms"])
        vs = r["compare"]
        print(f"session {i}: speedup {vs['speedup']:.3f} "
              f"(95 % CI {vs['speedup_lo']:.3f}–{vs['speedup_hi']:.3f})"
              + (f", default medians per process {per} ms" if per else ""))
    pairs = list(itertools.permutations(results, 2))
    inside = sum(b["compare"]["speedup_lo"] <= a["compare"]["speedup"] <= b["compare"]["speedup_hi"]
                 for a, b in pairs)
    print(f"{recipe}, {steps} steps, {schedule}, --repeats {repeats}, {n} sessions of {seconds:.0f} s: "
          f"a session's speedup inside another's interval in {inside} of {len(pairs)} ordered pairs")
