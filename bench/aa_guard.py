"""How often tuimon's answer is right on this machine (run by hand): A/A pairs must be called
within noise, real slowdowns must be seen.

    .venv/bin/python bench/aa_guard.py [--pairs 20] [--slowdowns 15,30] [--repeats 3] [--steps 600]

Each session is `tuimon bench/aa_recipe.py --headless --modes eager --set tag=a,b` (two identical
variants: an A/A pair inside the session) with the default number of processes a variant, unless
--repeats says otherwise. Per pair of sessions:
- in-session A/A: is `eager/fp32 · tag=b` within noise of `tag=a` (its axis interval)?
- compare A/A: `tuimon compare A B --fail-if-slower 5` on two sessions of the same work: exit
  0 (pass), 1 (fail: a false alarm), 4 (cannot tell);
- in-session A/B: one session racing `depth` at the default and N % more work (`--set
  depth=20,23,26`): is each slower beyond noise (its axis interval, rounds paired)?
- compare A/B: B with `depth` raised so a step does N % more work: does the guard fail it?
Prints a table and one JSON line to paste into bench/RESULTS.md; also times the sessions.
`--keep DIR` keeps the sessions; `--reread DIR [--spreads 0,10,20]` runs none and judges the kept
pairs again with `compare --session-spread` set to each value.

`--until-known` (issue 42) runs the adaptive stop instead: --pairs A/A sessions (`--set tag=a,b
--until-known`: a claim is an answer of "faster" or "slower") and as many A/B sessions with the
first of --slowdowns' work added (`--set depth=20,23`: found when the answer is "slower"), each
with its rounds, its stepping and why it stopped.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import tempfile
import time
from pathlib import Path

from tuimon.report import schema

ROOT = Path(__file__).resolve().parent.parent
TUIMON = str(ROOT / ".venv/bin/tuimon")
RECIPE = str(ROOT / "bench/aa_recipe.py")
DEPTH = 20  # the recipe's default


def session(out: Path, depth, repeats: int | None, steps: int, tags: str = "a,b") -> tuple[Path, float]:
    cmd = [TUIMON, RECIPE, "--headless", "--modes", "eager", "--set", f"tag={tags}",
           "--set", f"depth={depth}",
           "--steps", str(steps), "--no-auto-capture", "--out", str(out)]
    if repeats is not None:
        cmd += ["--repeats", str(repeats)]
    t0 = time.monotonic()
    subprocess.run(cmd, check=True, capture_output=True)
    return sorted(out.iterdir())[-1], time.monotonic() - t0


def in_session_within(path: Path) -> tuple[bool, float, dict]:
    summary = schema.read(path / "summary.json")
    rows = summary["variants"] or summary["runs"]
    b = next(r for r in rows if r["axes"].get("tag") == "b")
    vs = b["compare"]
    return vs["axis_speedup_lo"] <= 1.0 <= vs["axis_speedup_hi"], vs["axis_speedup"], summary["noise"]


def guard(a: Path, b: Path, spread: float = 0.0) -> tuple[int, str]:
    proc = subprocess.run([TUIMON, "compare", str(a), str(b), "--format", "json", "--fail-if-slower", "5",
                           "--session-spread", str(spread)], capture_output=True, text=True)
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
    p.add_argument("--keep", help="keep the sessions in this directory (for --reread)")
    p.add_argument("--reread", metavar="DIR", help="run no session: judge the sessions kept in DIR "
                   "with compare --session-spread each of --spreads")
    p.add_argument("--spreads", default="0,10,20", help="with --reread: --session-spread values (%%)")
    p.add_argument("--until-known", action="store_true", help="A/A and A/B under the adaptive stop")
    args = p.parse_args()
    if args.until_known:
        adaptive(args.pairs, int(args.slowdowns.split(",")[0]), Path(args.keep) if args.keep else None)
        return
    if args.reread:
        reread(Path(args.reread), [float(x) for x in args.spreads.split(",")],
               [int(x) for x in args.slowdowns.split(",") if x])
        return
    slowdowns = [int(x) for x in args.slowdowns.split(",") if x]
    out = {"aa_sessions": 0, "aa_within": 0, "aa_codes": {}, "detect": {}, "session_s": [],
           "spread_pct": [], "round_pct": [], "in_session_detect": {}}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(args.keep or tmp)
        for n in range(args.pairs):
            a, ta = session(root / f"a{n}", DEPTH, args.repeats, args.steps)
            b, tb = session(root / f"b{n}", DEPTH, args.repeats, args.steps)
            out["session_s"] += [round(ta, 1), round(tb, 1)]
            for s in (a, b):
                within, ratio, noise = in_session_within(s)
                out["aa_sessions"] += 1
                out["aa_within"] += within
                out["spread_pct"].append(round(noise["pct"], 1))
                out["round_pct"].append(round(noise.get("round_pct", 0.0), 1))
                print(f"  in-session A/A: {ratio:.3f} {'within' if within else 'BEYOND'} noise; "
                      f"spread ±{noise['pct']:.1f} %, within a round ±{noise.get('round_pct', 0):.1f} %",
                      flush=True)
            code, said = guard(a, b)
            out["aa_codes"][str(code)] = out["aa_codes"].get(str(code), 0) + 1
            print(f"A/A pair {n + 1}: compare exit {code} {said}", flush=True)
            # In one session: the slower depths raced against the default, round by round.
            depths = [DEPTH] + [round(DEPTH * (1 + pct / 100)) for pct in slowdowns]
            ab, _ = session(root / f"ab{n}", ",".join(map(str, depths)), args.repeats, args.steps, tags="a")
            rows = schema.read(ab / "summary.json")
            rows = rows["variants"] or rows["runs"]
            for pct, depth in zip(slowdowns, depths[1:], strict=True):
                r = next(x for x in rows if x["axes"].get("depth") == str(depth))
                seen = r["compare"]["axis_speedup_hi"] < 1.0  # slower beyond noise
                d = out["in_session_detect"].setdefault(str(pct), 0)
                out["in_session_detect"][str(pct)] = d + seen
                print(f"  in-session +{pct} % work: {r['axis_speedup']:.3f} [{r['axis_speedup_lo']:.3f}, "
                      f"{r['axis_speedup_hi']:.3f}] {'seen' if seen else 'not seen'}", flush=True)
            for pct in slowdowns:
                depth = round(DEPTH * (1 + pct / 100))
                slow, _ = session(root / f"s{pct}-{n}", depth, args.repeats, args.steps)
                code, said = guard(a, slow)
                d = out["detect"].setdefault(str(pct), {})
                d[str(code)] = d.get(str(code), 0) + 1
                print(f"  +{pct} % work: compare exit {code} {said}", flush=True)
    print(f"in-session A/A within noise: {out['aa_within']} of {out['aa_sessions']}")
    print(f"compare A/A exit codes: {out['aa_codes']} (1 = a false alarm)")
    for pct, seen in out["in_session_detect"].items():
        print(f"in one session, +{pct} % work seen slower beyond noise: {seen} of {args.pairs}")
    for pct, codes in out["detect"].items():
        print(f"compare +{pct} % work: exit codes {codes} (1 = seen)")
    print(json.dumps(out))


def adaptive(n: int, pct: int, keep: Path | None) -> None:
    """A/A and A/B sessions under --until-known: how often a difference is claimed, and found."""
    out: dict = {"aa": [], "ab": []}
    with tempfile.TemporaryDirectory() as tmp:
        root = keep or Path(tmp)
        for i in range(n):
            for kind, axis in (("aa", ["--set", "tag=a,b"]), ("ab", ["--set", f"depth={DEPTH},"
                                                                       f"{round(DEPTH * (1 + pct / 100))}"])):
                where = root / f"{kind}{i}"
                t0 = time.monotonic()
                subprocess.run([TUIMON, RECIPE, "--headless", "--modes", "eager", *axis, "--until-known",
                                "--no-auto-capture", "--out", str(where)], check=False, capture_output=True)
                found = sorted(where.glob("*/summary.json"))
                known = (schema.read(found[-1]) if found else {}).get("known") or {}
                said = {"code": known.get("code"), "rounds": known.get("rounds"),
                        "stepped_s": known.get("stepped_s"), "stopped": known.get("stopped"),
                        "speedup": known.get("speedup"), "lo": known.get("lo"), "hi": known.get("hi"),
                        "wall_s": round(time.monotonic() - t0, 1)}
                out[kind].append(said)
                print(f"{kind} {i + 1}: {said}", flush=True)
    claims = sum(s["code"] in ("faster", "slower") for s in out["aa"])
    found_n = sum(s["code"] == "slower" for s in out["ab"])
    print(f"A/A under --until-known: a difference claimed in {claims} of {n} sessions")
    print(f"A/B, +{pct} % work: found slower in {found_n} of {n} sessions")
    print(json.dumps(out))


def reread(root: Path, spreads: list[float], slowdowns: list[int]) -> None:
    """compare's exit codes over the kept pairs, for each --session-spread."""
    def last(d: Path) -> Path | None:
        found = sorted(x for x in d.iterdir() if (x / "summary.json").is_file()) if d.is_dir() else []
        return found[-1] if found else None

    pairs = sorted(int(d.name[1:]) for d in root.glob("a*") if d.name[1:].isdigit())
    for spread in spreads:
        codes: dict[str, dict[str, int]] = {"A/A": {}, **{f"+{pct} %": {} for pct in slowdowns}}
        for n in pairs:
            a = last(root / f"a{n}")
            others = {"A/A": last(root / f"b{n}"),
                      **{f"+{pct} %": last(root / f"s{pct}-{n}") for pct in slowdowns}}
            for what, b in others.items():
                if a is not None and b is not None:
                    code = str(guard(a, b, spread)[0])
                    codes[what][code] = codes[what].get(code, 0) + 1
        print(f"--session-spread {spread:g}: " + "; ".join(f"{k}: exit codes {v}" for k, v in codes.items()))


if __name__ == "__main__":
    main()
