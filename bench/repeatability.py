"""Repeatability (run by hand): the same session twice; do the speedups agree within the
reported intervals? .venv/bin/python bench/repeatability.py [STEPS] [SCHEDULE]"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def session(out: Path, cache: Path, steps: int, schedule: str) -> dict:
    subprocess.run([str(ROOT / ".venv/bin/tuimon"), str(ROOT / "recipes/tiny_mlp.py"), "--headless",
                    "--modes", "eager,default", "--steps", str(steps), "--schedule", schedule,
                    "--cache-dir", str(cache), "--out", str(out), "--no-probes"],
                   check=True, capture_output=True)
    path = sorted(out.iterdir())[-1]
    runs = json.loads((path / "summary.json").read_text())["runs"]
    return next(r for r in runs if r["mode"] == "default")


if __name__ == "__main__":
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 3000
    schedule = sys.argv[2] if len(sys.argv) > 2 else "interleave"
    with tempfile.TemporaryDirectory() as tmp:
        cache = Path(tmp) / "cache"
        session(Path(tmp) / "warm-up", cache, 50, schedule)  # fill the Inductor cache first
        a, b = (session(Path(tmp) / f"s{i}", cache, steps, schedule) for i in (1, 2))
    for name, r in (("first", a), ("second", b)):
        print(f"{name}: speedup {r['speedup']:.3f} (95 % CI {r['speedup_lo']:.3f}–{r['speedup_hi']:.3f}), "
              f"{r['measured']} steps measured")
    overlap = a["speedup_lo"] <= b["speedup_hi"] and b["speedup_lo"] <= a["speedup_hi"]
    inside = (a["speedup_lo"] <= b["speedup"] <= a["speedup_hi"]
              and b["speedup_lo"] <= a["speedup"] <= b["speedup_hi"])
    print(f"{steps} steps, {schedule}: intervals overlap: {overlap}; "
          f"each speedup inside the other's interval: {inside}")
