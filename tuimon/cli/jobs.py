"""The checks of a session whose variants are torchrun jobs, before anything is launched: a
script under torchrun (``tuimon run -- torchrun ...``) or a recipe as N ranks (``--nproc N``).

A job that spans several nodes runs one tuimon per node, each with the same options: they agree
on which variant runs when only through what they are given, so
- the variants run one after the other (``--schedule sequential``) unless
  ``--schedule interleave --turn-steps N`` (turns that end at fixed steps on every node) or
  ``--schedule parallel`` is asked for;
- ``--steps`` ends them, not ``--duration`` (each node would stop at its own step).

Under Slurm's ``srun`` (tuimon/slurm.py) the supported shape is that one: one tuimon a node, its
ranks started by torchrun with ``--nnodes`` the job step's nodes and each node's own ``--node-rank``.
A Slurm job step over several nodes gets the same treatment as a torchrun ``--nnodes`` job whatever the
command says; what would collide or hang is refused in one line naming that command: several
tuimon tasks on one node (they would race each other's variants on one node's devices), a script
or recipe srun starts once a task (tuimon takes a job's ranks from torchrun; a script that calls
init_process_group from SLURM_PROCID is not taken as ranks yet), a torchrun whose node count is
not the job step's, and a static rendezvous's ``--node-rank`` that is not this node's (the batch
script's own ``$SLURM_NODEID``, 0, expanded before srun started the tasks).
"""

from __future__ import annotations

import argparse
import os

from tuimon import slurm
from tuimon.cli.args import UsageError
from tuimon.settings import Program
from tuimon.torchrun import is_torchrun
from tuimon.torchrun import parse as parse_torchrun

SRUN_SHAPE = ("one tuimon a node, its ranks started by torchrun: srun --ntasks-per-node 1 "
              "--kill-on-bad-exit=1 bash -c "
              "'tuimon run --steps N -- torchrun --nnodes $SLURM_NNODES --node-rank $SLURM_NODEID "
              "--nproc-per-node GPUS --master-addr HOST --master-port 29500 train.py'")
SEQUENTIAL_NOTE = ("a job over several nodes: the variants run one after the other (--schedule "
                   "sequential), so that every node runs the same variant at the same time "
                   "(--schedule interleave --turn-steps N takes turns at fixed steps instead)")


def explicit(argv: list[str], flag: str) -> bool:
    return any(a == flag or a.startswith(flag + "=") for a in argv)


def check_jobs(args: argparse.Namespace, options: list[str], script: Program | None) -> list[str]:
    """UsageError for what a job cannot do; the notes to print. May set ``args.schedule``; sets
    ``args.slurm``: the srun task this is (None: not under srun)."""
    nproc = getattr(args, "nproc", None)
    if script is not None and nproc is not None:
        raise UsageError("--nproc is a recipe's option: a script's ranks are torchrun's "
                         "(tuimon run -- torchrun --nproc-per-node N train.py)")
    if nproc is not None and args.device.startswith("cuda:"):
        raise UsageError("--device cuda:N and --nproc do not go together: each rank takes the GPU of "
                         "its local rank (--device cuda); CUDA_VISIBLE_DEVICES picks the GPUs")
    args.slurm = srun_task(script)
    if not several_nodes(script, args.slurm):
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


def several_nodes(script: Program | None, task: slurm.SlurmTask | None) -> bool:
    """A job whose ranks span several nodes, each with its own tuimon: a torchrun --nnodes job,
    or any job step srun started on several nodes."""
    return bool(script is not None and script.is_job and (script.nnodes or 1) > 1) or \
        bool(task is not None and task.nodes > 1)


def srun_task(script: Program | None, env=None) -> slurm.SlurmTask | None:
    """The srun task this tuimon is (None: not under srun), its shape checked (the module's
    text): UsageError naming the supported command for one that would collide or hang."""
    try:
        task = slurm.from_env(os.environ if env is None else env)
    except slurm.SlurmError as exc:
        raise UsageError(str(exc)) from None
    if task is None:
        return None
    node = task.node_name or f"node {task.node_id}"
    if task.tasks_here > 1:
        raise UsageError(f"srun started {task.tasks_here} tuimon tasks on {node}: they would race "
                         f"each other's variants on one node; run {SRUN_SHAPE}")
    job = script is not None and script.launcher == "torchrun"
    if task.tasks > 1 and not job:
        what = (f"{script.name} would run once a task, as {task.tasks} processes of their own "
                "(a script that calls init_process_group from SLURM_PROCID is not taken as ranks "
                "yet)" if script is not None else "each task would run the recipe as a session "
                "of its own (a recipe's --nproc ranks are one node's)")
        raise UsageError(f"under srun with {task.tasks} tasks {what}: run {SRUN_SHAPE}")
    if script is not None and job and task.nodes > 1:
        check_torchrun(list(script.command), task, node, os.environ if env is None else env)
    return task


def check_torchrun(command: list[str], task: slurm.SlurmTask, node: str, env) -> None:
    """A torchrun job over the job step's nodes: its node count the job step's, and on a static
    rendezvous (torchrun's default) this node's own --node-rank. An option left out is read
    as torchrun reads it: from its PET_* variable, else its default."""
    job = parse_torchrun(command, is_torchrun(command, python=True) or 1)

    def option(name: str, default: str) -> str:
        pet = "PET_" + name.lstrip("-").replace("-", "_").upper()
        return str(job.options.get(name) or env.get(pet) or default)

    nnodes = option("--nnodes", "1")
    low, _, high = nnodes.partition(":")
    if not (low.isdigit() and (high or low).isdigit() and int(low) <= task.nodes <= int(high or low)):
        raise UsageError(f"torchrun --nnodes {nnodes} under srun on {task.nodes} nodes: each node's "
                         f"torchrun must count the job step's nodes (--nnodes $SLURM_NNODES, or a "
                         f"range that holds {task.nodes})")
    if option("--rdzv-backend", "static") != "static":
        return  # a c10d / etcd rendezvous numbers the nodes itself
    given = option("--node-rank", "0")
    if given != str(task.node_id):
        raise UsageError(f"torchrun --node-rank {given} on {node}, Slurm node {task.node_id} of "
                         f"{task.nodes}: every node would claim the same rank; give each node its "
                         "own, expanded there: srun ... bash -c 'tuimon run ... -- torchrun "
                         "--node-rank $SLURM_NODEID ...' (in single quotes: the batch script's own "
                         "$SLURM_NODEID is 0, expanded before srun starts the tasks)")
