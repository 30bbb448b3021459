"""Each of `tuimon try`'s CPU fixes raced on a case where it should help and one where it should
not (issue 34), as a user runs them: a session (`--modes eager,default`), then `tuimon try
SESSION --only FIXES --no-together --headless` on it. Every compile is cold (no --cache-dir: a
fresh cache per run), so a fix's compile time is compared with the base's cold compile.

    python bench/try_cases.py                 # every case (~25 min on 2 quiet cores)
    python bench/try_cases.py --only dynamic  # the cases of one fix

Prints one markdown row per fix and case (the answer's code, the step against the variant
without it with its interval, compile before → after, recompiles and breaks before → after, the
answer's own line) for bench/RESULTS.md; the sessions stay under --out.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tuimon.report import schema

ROOT = Path(__file__).resolve().parents[1]
R, S = ROOT / "tests" / "recipes", ROOT / "tests" / "scripts"

# (name, the session's arguments after `tuimon`, the fixes tried, what we expect of each: our
# guess from the model, written before the run; "?" where we could not tell)
CASES = [
    ("8 repeated blocks", [str(R / "blocks.py"), "--set", "depth=8", "--set", "width=64"],
     "regional,foreach,amp", {"regional": "help (compile)", "foreach": "?", "amp": "?"}),
    ("2 repeated blocks", [str(R / "blocks.py"), "--set", "depth=2", "--set", "width=64"],
     "regional", {"regional": "no help"}),
    ("a batch of another size", [str(R / "shape_change.py")], "dynamic", {"dynamic": "help"}),
    (".item() in forward", [str(R / "item_in_forward.py")], "scalars", {"scalars": "help"}),
    ("200 small parameters, AdamW(foreach=False)", [str(R / "optimizer_heavy.py")], "opt,foreach",
     {"opt": "help", "foreach": "cannot apply"}),
    ("200 small parameters, AdamW()", [str(R / "optimizer_heavy.py"), "--set", "foreach=unset"],
     "foreach", {"foreach": "help"}),
    ("an MLP, static shapes", [str(ROOT / "recipes" / "tiny_mlp.py")],
     "dynamic,scalars,opt,regional,channels-last",
     {"dynamic": "no help", "scalars": "no help", "opt": "?", "regional": "cannot apply",
      "channels-last": "cannot apply"}),
    ("a conv autoencoder", [str(ROOT / "recipes" / "autoencoder.py")], "channels-last,amp",
     {"channels-last": "?", "amp": "?"}),
    ("a slow DataLoader (script)", ["run", "--", sys.executable, str(S / "slow_data.py")], "loader",
     {"loader": "help"}),
    ("a plain loop (script)", ["run", "--", sys.executable, str(S / "plain_loop.py")], "loader",
     {"loader": "no help"}),
]


def tuimon(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tuimon", *args], capture_output=True, text=True,
                          cwd=cwd)


def newest(out: Path, before: set) -> Path | None:
    made = sorted(set(out.iterdir()) - before) if out.exists() else []
    return made[-1] if made else None


def fmt(x, spec="{:.2f}", none="–"):
    return none if x is None else spec.format(x)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", help="the cases of these fixes (comma list)")
    ap.add_argument("--steps", default="120")
    ap.add_argument("--out", type=Path, default=Path(tempfile.mkdtemp(prefix="try-cases-")))
    a = ap.parse_args()
    wanted = set(a.only.split(",")) if a.only else None
    rows = []
    for name, args, fixes, expect in CASES:
        if wanted and not wanted & set(fixes.split(",")):
            continue
        out = a.out / "".join(c if c.isalnum() else "-" for c in name)
        out.mkdir(parents=True, exist_ok=True)
        cmd = list(args)
        at = cmd.index("--") if "--" in cmd else len(cmd)
        cmd[at:at] = ["--headless", "--modes", "eager,default", "--steps", a.steps, "--repeats", "1",
                      "--out", str(out)]
        t0 = time.monotonic()
        ran = tuimon(*cmd, cwd=out)
        session = newest(out, set())
        if ran.returncode != 0 or session is None:
            rows.append(f"| {name} | {fixes} | – | session failed ({ran.returncode}): "
                        f"{ran.stderr.strip().splitlines()[-1:]} |")
            continue
        before = set(out.iterdir())
        tried = tuimon("try", str(session), "--only", fixes, "--no-together", "--headless", cwd=out)
        took = time.monotonic() - t0
        second = newest(out, before)
        doc = schema.read(second / "summary.json") if second else {}
        answer = [line for line in tried.stdout.splitlines() if line.strip()]
        print(f"## {name} ({took:.0f} s): {' '.join(cmd)}\n" + "\n".join(answer), flush=True)
        for o in doc.get("tried", []):
            fix = o.get("fix")
            line = o.get("line", "")
            rows.append(
                f"| {name} | {fix} | {expect.get(fix, '?')} | {o.get('code')} | "
                f"{fmt(o.get('speedup'))}× ({fmt(o.get('speedup_lo'))}–{fmt(o.get('speedup_hi'))}) | "
                f"{fmt(o.get('base_compile_s'), '{:.1f}')} → {fmt(o.get('compile_s'), '{:.1f}')} s | "
                f"{o.get('recompiles')} / {o.get('breaks')} | {line} |")
        if not doc.get("tried"):
            rows.append(f"| {name} | {fixes} | – | no try session: {' '.join(answer[-2:])} |")
    print("\n| case | fix | should | code | step vs without (95 % CI) | compile | "
          "recompiles / breaks (base, fix) | the answer |")
    print("|---|---|---|---|---|---|---|---|")
    print("\n".join(rows))
    print(f"\nsessions under {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
