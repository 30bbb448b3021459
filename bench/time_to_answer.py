"""Time to an answer (issue 42): today's defaults against the adaptive stop, per case — the wall
time of a session from its start to its verdict, and both verdicts. Run by hand, alone on the
machine (a session per case and arm, one after the other):

    .venv/bin/python bench/time_to_answer.py OUT_DIR [--cases demo,tiny_mlp,...] [--pub /work/pub]
        [--script-python /work/pub/.venv/bin/python]

"today" is what tuimon did before the adaptive stop, at its defaults: a recipe runs its default
steps in 3 processes a variant (`--to-end` is the same for a recipe: no flag), a script runs to
its own end once a variant (`--to-end`). "new" is `--until-known` for a recipe and no flag for a
script. A script that would run for hours (x-transformers' copy task: 100,000 batches) is not run
today-style: its time is its eager and compiled step times (from the new session) times its
batches, said as an estimate. The public scripts come from bench/public/README.md (their
directories under --pub, their own Python with gymnasium etc.); a case whose directory is missing
is skipped with a line.

Prints a Markdown table for bench/RESULTS.md and one JSON line. Both arms compile cold (each in
its own --out, so the new arm does not start warm from the old one's artifacts).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SAC = ["sac_continuous_action.py", "--env-id", "Pendulum-v1", "--total-timesteps", "1500",
       "--learning-starts", "500", "--no-cuda"]
LLAMA = ["train.py", "--device=cpu", "--compile=False", "--dtype=float32", "--vocab_source=custom",
         "--vocab_size=512", "--dim=64", "--n_layers=2", "--n_heads=4", "--n_kv_heads=4",
         "--max_seq_len=64", "--batch_size=8", "--gradient_accumulation_steps=4", "--eval_interval=20",
         "--eval_iters=5", "--max_iters=60", "--warmup_iters=10"]


@dataclass
class Case:
    recipe: str | None = None  # a recipe (None with no command: the demo)
    command: list[str] = field(default_factory=list)  # a script: its argv after the interpreter
    pub: str | None = None  # its directory under --pub
    batches: int | None = None  # a script too long to run today-style: its batches, for the estimate


CASES = {
    "demo": Case(),
    "tiny_mlp": Case("recipes/tiny_mlp.py"),
    "autoencoder": Case("recipes/autoencoder.py"),
    "sac": Case(command=SAC, pub="cleanrl_sac_continuous_action"),
    "llama2c": Case(command=LLAMA, pub="llama2c"),
    "xtransformers_copy": Case(command=["train_copy.py"], pub="xtransformers_copy", batches=100_000),
}


def session(out: Path, case: Case, new: bool, args) -> dict:
    """One session of ``case``: its wall time, verdict and why it stopped."""
    tuimon = [sys.executable, "-m", "tuimon"]
    flags = ["--headless", "--no-auto-capture", "--out", str(out)]
    if case.command:
        cmd = [*tuimon, "run", *flags, *([] if new else ["--to-end"]), "--", args.script_python,
               *case.command]
        cwd = Path(args.pub) / case.pub
    else:
        cmd = [*tuimon, *([case.recipe] if case.recipe else []), *flags, *(["--until-known"] if new else [])]
        cwd = ROOT
    env = {**os.environ, "WANDB_MODE": "disabled", "HF_HUB_OFFLINE": "1",
           "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)}
    t0 = time.monotonic()
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    wall = time.monotonic() - t0
    found = sorted(out.glob("*/summary.json"))
    if proc.returncode not in (0, 4) or not found:  # 4: the verdict is "cannot tell"
        return {"wall_s": round(wall, 1), "error": (proc.stderr.strip().splitlines() or ["?"])[-1]}
    doc = json.loads(found[-1].read_text())
    verdict, known = doc.get("verdict") or {}, doc.get("known") or {}
    rows = doc.get("variants") or doc.get("runs") or []
    return {"wall_s": round(wall, 1), "kind": verdict.get("code"), "winner": verdict.get("winner"),
            "speedup": verdict.get("speedup"), "line": verdict.get("line"), "stopped": known.get("stopped"),
            "known": known.get("line"), "session": found[-1].parent.name,
            "median_ms": {r["label"]: (r.get("timing") or {}).get("median_ms") for r in rows}}


def estimate(case: Case, new: dict) -> dict:
    """Today's time for a script too long to run: every variant's batches at its median step."""
    ms = [v for v in new.get("median_ms", {}).values() if v]
    if not ms:
        return {"error": "no step time to estimate from"}
    return {"wall_s": round(sum(case.batches * m / 1000.0 for m in ms), 1), "estimated": True}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out", type=Path)
    p.add_argument("--cases", default=",".join(CASES))
    p.add_argument("--pub", default="/work/pub", help="the public scripts' directories (bench/public)")
    p.add_argument("--script-python", default="/work/pub/.venv/bin/python",
                   help="the interpreter the public scripts run in (their own packages)")
    args = p.parse_args()
    results = {}
    for name in args.cases.split(","):
        case = CASES[name]
        if case.pub and not (Path(args.pub) / case.pub).is_dir():
            print(f"{name}: skipped, no {Path(args.pub) / case.pub} (bench/public/README.md)", flush=True)
            continue
        new = session(args.out / name / "new", case, True, args)
        today = estimate(case, new) if case.batches else session(args.out / name / "today", case, False, args)
        results[name] = {"today": today, "new": new}
        print(f"{name}: today {today.get('wall_s')} s {today.get('kind') or today.get('error') or ''}; "
              f"new {new.get('wall_s')} s {new.get('kind') or new.get('error')}", flush=True)
    print("\n| case | today: time · verdict | new: time · verdict · why it stopped | new ÷ today |")
    print("|---|---|---|---|")
    for name, r in results.items():
        t, n = r["today"], r["new"]
        ratio = f"{n['wall_s'] / t['wall_s']:.2f}" if t.get("wall_s") and n.get("wall_s") else "–"
        said = "estimated (not run)" if t.get("estimated") else f"{t.get('kind') or t.get('error')}"
        print(f"| {name} | {t.get('wall_s', 0) / 60:.1f} min · {said} | {n.get('wall_s', 0) / 60:.1f} min · "
              f"{n.get('kind') or n.get('error')} · {n.get('stopped')} | {ratio} |")
    print(json.dumps(results))


if __name__ == "__main__":
    main()
