"""``tuimon sweep RECIPE`` and ``tuimon sweep [options] -- CMD``: every compile mode × precision
(× the ``--set`` axes) in one interleaved session, sized by ``--budget``, ending with the
verdict. The session is ``tuimon RECIPE``'s (cli/run.py) with three things first:

- what cannot run here is skipped with the reason, asked of torch in a child
  (runner/device_facts.py): on CPU, ``reduce-overhead`` and ``max-autotune`` compile as
  ``default`` and ``max-autotune-no-cudagraphs`` (CUDA graphs need a GPU), so they are skipped
  when those run anyway; ``amp`` where autocast fails; a run that runs out of memory while
  building is skipped by the supervisor, not failed;
- ``--budget`` shares the time between the runs (cli/budget.py) and ends them when spent;
- the session is marked a sweep, for the summary.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

from tuimon import cores
from tuimon.cli.args import Parser, UsageError
from tuimon.settings import Program
from tuimon.variants import MODES, PRECISIONS, Variant

CPU_SAME = {"reduce-overhead": "default", "max-autotune": "max-autotune-no-cudagraphs"}
FACTS_TIMEOUT_S = 120.0


def sweep_parser() -> Parser:
    from tuimon.cli.run_flags import run_parser

    p = run_parser()
    p.prog = "tuimon sweep"
    p.description = ("Race every compile mode × precision (× the --set axes) of a recipe, or of "
                     "your own script after --, in one interleaved session, and end with the "
                     "verdict: which variant to use, or to stay eager, and why.")
    p.epilog = ("e.g. tuimon sweep recipes/tiny_mlp.py --budget 10m --horizon 2h; "
                "tuimon sweep --budget 20m -- python train.py --epochs 1")
    p.set_defaults(modes=",".join(MODES), precision=None)
    for action in p._actions:  # the same flags as `tuimon RECIPE`, with a sweep's defaults
        if action.dest == "modes":
            action.help = f"comma list of compile modes (default: all: {', '.join(MODES)})"
        elif action.dest == "precision":
            action.help = "comma list of precisions: fp32, amp (default: both; a script: its own)"
        elif action.dest == "recipe":
            action.help = ("a recipe file (defines build(cfg)); default: demo. Your own script "
                           "instead: tuimon sweep [options] -- python train.py ...")
        elif action.dest == "budget":
            action.help = ("the whole sweep's time (20m, 1h30m, or seconds): each run steps for an "
                           "equal share of what starting and compiling leave (estimated from this "
                           "recipe's earlier sessions under --out, or the session --cache-from "
                           "names), and every run stops when it is spent; with --until-known, "
                           "its cap on stepping instead")
    return p


def sweep_command(args: argparse.Namespace, argv: list[str], command: list[str] | None = None) -> int:
    from tuimon.cli.run import run_command

    if args.budget is not None and (args.steps is not None or args.duration is not None):
        raise UsageError("--budget sizes each run's steps itself: give --budget, or --steps / "
                         "--duration, not both")
    if args.precision is None:
        args.precision = "fp32" if command is not None else ",".join(PRECISIONS)
    return run_command(args, argv, command, prepare=prepare)


def prepare(args: argparse.Namespace, variants: list[Variant], answer: dict, recipe: Path,
            script: Program | None, cache: str) -> tuple[list[Variant], float | None]:
    """The variants that can run here, the others in ``answer["skipped"]``; with --budget,
    each run's --duration (``args``: the runs' settings are built from them next) and the
    deadline."""
    from tuimon.cli import budget

    facts = device_facts("auto" if script is not None else args.device)
    if not facts.get("ok"):
        raise UsageError(facts.get("error") or "torch could not be asked what this machine runs")
    kept, skipped = skip(variants, facts)
    if not kept:
        raise UsageError("nothing to sweep here: " + "; ".join(f"{s['label']}: {s['reason']}"
                                                            for s in skipped))
    answer.update(sweep=True, skipped=skipped)
    say = [f"sweep: {len(kept)} variants on {facts['device']}"
           + (f" × {args.repeats} processes" if args.repeats > 1 else "")]
    say += [f"skipped: {s['label']}: {s['reason']}" for s in skipped]
    deadline = None
    if args.budget is not None and not answer.get("until_known"):  # --until-known: its cap instead
        key: dict[str, object] = ({"command": list(script.command)} if script is not None
                                  else {"recipe": str(recipe)})
        key["cache"] = cache  # a warm cache's compiles say nothing of a cold one's
        try:
            warm_rounds = not args.cold and cache.startswith("fresh")  # rounds 2..K start warm
            plan = budget.share(args.budget, kept, args.repeats, cores.usable(),
                                budget.history(Path(args.out), key), warm_rounds)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        answer["budget"] = plan
        # A variant's share of the stepping time: round 1 runs the most of it (tuimon/lengths.py).
        full = plan["full_s"]
        args.duration, args.steady_duration = full, True
        deadline = args.budget
        say.append(f"budget {args.budget / 60:.1f} min: {plan['text']}")
    for line in say:
        print(line, flush=True)
    return kept, deadline


def skip(variants: list[Variant], facts: dict) -> tuple[list[Variant], list[dict]]:
    """(the variants to run, {label, reason} for each skipped): what the machine cannot run."""
    kept, skipped = [], []
    on_cpu = not facts.get("cuda")
    for v in variants:
        same = CPU_SAME.get(v.mode)
        if on_cpu and same and v.but(mode=same) in variants:
            skipped.append({"label": v.label, "reason": f"CUDA graphs need a GPU: on CPU {v.mode} "
                            f"compiles as {same}, which the sweep runs"})
        elif v.precision == "amp" and not facts.get("amp_ok", True):
            skipped.append({"label": v.label, "reason": f"autocast ({facts.get('amp_dtype')}) "
                            f"does not work here: {facts.get('amp_error')}"})
        else:
            kept.append(v)
    return kept, skipped


def device_facts(device: str) -> dict:
    """runner/device_facts.py's answer, from a child (this process never imports torch)."""
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parents[2])  # the child finds this very tuimon
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    try:
        proc = subprocess.run([sys.executable, "-m", "tuimon.runner.device_facts", "--device", device],
                              capture_output=True, text=True, timeout=FACTS_TIMEOUT_S, env=env,
                              stdin=subprocess.DEVNULL)
    except (subprocess.TimeoutExpired, OSError) as exc:
        return {"ok": False, "error": f"asking torch what this machine runs failed: {exc}"}
    try:
        return json.loads(proc.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        tail = (proc.stderr.strip().splitlines() or [f"exit code {proc.returncode}"])[-1]
        return {"ok": False, "error": f"asking torch what this machine runs failed: {tail}"}
