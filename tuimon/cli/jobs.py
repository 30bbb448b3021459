"""The checks of a session whose variants are torchrun jobs, before anything is launched: a
script under torchrun (``tuimon run -- torchrun ...``) or a recipe as N ranks (``--nproc N``).

A job that spans several nodes runs one tuimon per node, each with the same options: they agree
on which variant runs when only through what they are given, so
- the variants run one after the other (``--schedule sequential``) unless
  ``--schedule interleave --turn-steps N`` (turns that end at fixed steps on every node) or
  ``--schedule parallel`` is asked for;
- ``--steps`` ends them, not ``--duration`` (each node would stop at its own step).
"""

from __future__ import annotations

import argparse

from tuimon.cli.args import UsageError
from tuimon.settings import Program

SEQUENTIAL_NOTE = ("a job over several nodes: the variants run one after the other (--schedule "
                   "sequential), so that every node runs the same variant at the same time "
                   "(--schedule interleave --turn-steps N takes turns at fixed steps instead)")


def explicit(argv: list[str], flag: str) -> bool:
    return any(a == flag or a.startswith(flag + "=") for a in argv)


def check_jobs(args: argparse.Namespace, options: list[str], script: Program | None) -> list[str]:
    """UsageError for what a job cannot do; the notes to print. May set ``args.schedule``."""
    nproc = getattr(args, "nproc", None)
    if script is not None and nproc is not None:
        raise UsageError("--nproc is a recipe's option: a script's ranks are torchrun's "
                         "(tuimon run -- torchrun --nproc-per-node N train.py)")
    if nproc is not None and args.device.startswith("cuda:"):
        raise UsageError("--device cuda:N and --nproc do not go together: each rank takes the GPU of "
                         "its local rank (--device cuda); CUDA_VISIBLE_DEVICES picks the GPUs")
    if script is None or not script.is_job or (script.nnodes or 1) <= 1:
        return []
    if args.duration is not None:
        raise UsageError("--duration with a job over several nodes: each node would stop at its own "
                         "step; use --steps (every rank stops at the same step)")
    if args.schedule == "interleave":
        if explicit(options, "--schedule") and args.turn_steps is None:
            raise UsageError("--schedule interleave with a job over several nodes needs --turn-steps N "
                             "(turns that end at the same step on every node)")
        if args.turn_steps is None:
            args.schedule = "sequential"
            return [SEQUENTIAL_NOTE]
    return []
