"""How often tuimon's answer is right on this machine (run by hand): A/A pairs must be called
within noise, real slowdowns must be seen.

    .venv/bin/python bench/aa_guard.py [--pairs 20] [--slowdowns 15,30] [--repeats 3] [--steps 600]

Each session is `tuimon bench/aa_recipe.py --headless --modes eager --set tag=a,b` (two identical
variants: an A/A pair inside the session) with the default number of processes a variant, unless
--repeats says otherwise. Per pair of sessions:
- in-session A/A: is `eager/fp32 · tag=b` within noise of `tag=a` (its axis interval)?
- compare A/A: `tuimon compare A B --fail-if-slower 5` on two sessions of the same work: exit
  0 (pass), 1 (fail: a false alarm), 4 (cannot tell);
- compare A/B: B with `depth` raised so a step does N % more work: does the guard fail it?
Prints a table and one JSON line to paste into bench/RESULTS.md; also times the sessions.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TUIMON = str(ROOT / ".venv/bin/tuimon")
RECIPE = str(ROOT / "bench/aa_recipe.py")
DEPTH = 20  # the recipe's default


def session(out: Path, depth: int, repeats: int | None, steps: int) -> tuple[Path, float]:
    cmd = [TUIMON, RECIPE, "--headless", "--modes", "eager", "--set", "tag=a,b", "--set", f"depth={depth}",
           "--steps", str(steps), "--no-auto-capture", "--out", str(out)]
    if repeats is not None:
        cmd += ["--repeats", str(repeats)]
    t0 = time.monotonic()
    subprocess.run(cmd, check=True, capture_output=True)
    return sorted(out.iterdir())[-1], time.monotonic() - t0


def in_session_within(path: Path) -> tuple[bool, float]:
    summary = json.loads((path / "summary.json").read_text())
    rows = summary["variants"] or summary["runs"]
    b = next(r for r in rows if r["axes"].get("tag") == "b")
    return b["axis_speedup_lo"] <= 1.0 <= b["axis_speedup_hi"], b["axis_speedup"]


def guard(a: Path, b: Path) -> tuple[int, str]:
    proc = subprocess.run([TUIMON, "compare", str(a), str(b), "--format", "json", "--fail-if-slower", "5"],
                          capture_output=True, text=True)
    doc = json.loads(proc.stdout)
    changes = [v["median_change"][1] for v in doc["variants"] if v["median_change"][1]]
    said = [f"{c['pct']:+.1f}%[{(c['lo'] - 1) * 100:+.0f},{(c['hi'] - 1) * 100:+.0f}]" for c in changes]
    return proc.returncode, " ".join(said)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--pairs", type=int, default=20)
    p.add_argument("--slowdowns", default="15,30")
    p.add_argument("--repeats", type=int)
    p.add_argument("--steps", type=int, default=600)
    args = p.parse_args()
    slowdowns = [int(x) for x in args.slowdowns.split(",") if x]
    out = {"aa_sessions": 0, "aa_within": 0, "aa_codes": {}, "detect": {}, "session_s": []}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for n in range(args.pairs):
            a, ta = session(root / f"a{n}", DEPTH, args.repeats, args.steps)
            b, tb = session(root / f"b{n}", DEPTH, args.repeats, args.steps)
            out["session_s"] += [round(ta, 1), round(tb, 1)]
            for s in (a, b):
                within, ratio = in_session_within(s)
                out["aa_sessions"] += 1
                out["aa_within"] += within
            code, said = guard(a, b)
            out["aa_codes"][str(code)] = out["aa_codes"].get(str(code), 0) + 1
            print(f"A/A pair {n + 1}: compare exit {code} {said}", flush=True)
            for pct in slowdowns:
                depth = round(DEPTH * (1 + pct / 100))
                slow, _ = session(root / f"s{pct}-{n}", depth, args.repeats, args.steps)
                code, said = guard(a, slow)
                d = out["detect"].setdefault(str(pct), {})
                d[str(code)] = d.get(str(code), 0) + 1
                print(f"  +{pct} % work: compare exit {code} {said}", flush=True)
    print(f"in-session A/A within noise: {out['aa_within']} of {out['aa_sessions']}")
    print(f"compare A/A exit codes: {out['aa_codes']} (1 = a false alarm)")
    for pct, codes in out["detect"].items():
        print(f"compare +{pct} % work: exit codes {codes} (1 = seen)")
    print(json.dumps(out))


if __name__ == "__main__":
    main()
