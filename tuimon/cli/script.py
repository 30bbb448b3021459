"""``tuimon run [options] -- COMMAND ...``: the user's own training script, unchanged.

The command is checked here, before anything starts: it must be Python (``python train.py``,
``python -m pkg.train``, or a script whose ``#!`` line names python), and its script must exist.
What a recipe's flags set that a script owns itself (precision, device, batch and image size)
is refused with one line: those go after ``--``, to the script. ``--set`` knobs reach it through
``{KEY}`` in its command, else as environment variables (tuimon/axes.py).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import sys
from dataclasses import replace
from pathlib import Path

from tuimon import accelerate_launch
from tuimon.axes import baseline, for_script
from tuimon.cli.args import UsageError
from tuimon.envvars import NO_STEP_S
from tuimon.settings import DEVICE, PRECISION, Program, ScriptHooks
from tuimon.torchrun import TorchrunError, is_torchrun
from tuimon.torchrun import parse as parse_torchrun

CLASS_NAME = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")  # --compile-module: a class, dotted or not

PYTHON = re.compile(r"python(\d+(\.\d+)*)?$")
VALUE_OPTIONS = ("-W", "-X", "-Q")  # interpreter options that take the next word as value
EXAMPLE = "e.g. tuimon run -- python train.py --epochs 3"


def split_run(argv: list[str]) -> tuple[list[str], list[str] | None]:
    """``run``'s words: (tuimon's options, the command after ``--``, or None without one)."""
    if "--" not in argv:
        return argv, None
    i = argv.index("--")
    return argv[:i], argv[i + 1:]


def check_command(command: list[str]) -> dict:
    """{"command", "script" (its path, or None for -m / -c), "name"}, and for a torchrun job
    (``torchrun ...`` or ``python -m torch.distributed.run ...``) "launcher": "torchrun",
    "nproc" (ranks per node, None when torchrun decides) and "nnodes" (the most nodes); for
    ``accelerate launch`` "launcher": "accelerate", and for one of several processes "multi",
    "nproc", "nnodes" as torchrun's; UsageError otherwise."""
    if not command:
        raise UsageError(f"no command after -- ({EXAMPLE})")
    exe = command[0]
    path = exe if os.sep in exe else shutil.which(exe)
    if path is None:
        raise UsageError(f"command not found: {exe} ({EXAMPLE})")
    if not os.path.isfile(path):
        raise UsageError(f"{exe}: no such file")
    python = bool(PYTHON.match(os.path.basename(exe)) or
                  PYTHON.match(os.path.basename(os.path.realpath(path))))
    if (start := is_torchrun(command, python)) is not None:
        return _torchrun_command(command, start)
    if (start := accelerate_launch.is_accelerate(command, python)) is not None:
        return _accelerate_command(command, start)
    if python:
        return _python_command(command)
    if _shebang(path) is None:
        raise UsageError(f"{exe} is not a Python program: tuimon runs Python training scripts "
                         "(python train.py, python -m pkg.train, or a script whose #! line names "
                         "python)")
    if not os.access(path, os.X_OK):
        raise UsageError(f"{exe} is not executable (chmod +x it, or run python {exe})")
    return {"command": command, "script": str(Path(path).resolve()), "name": Path(path).stem}


def _python_command(command: list[str]) -> dict:
    rest = command[1:]
    i = 0
    while i < len(rest) and rest[i].startswith("-") and rest[i] != "-":
        if rest[i] == "-m":
            if i + 1 >= len(rest):
                raise UsageError("python -m without a module (e.g. python -m pkg.train)")
            return {"command": command, "script": None, "name": rest[i + 1].rsplit(".", 1)[-1]}
        if rest[i] == "-c":
            return {"command": command, "script": None, "name": "python-c"}
        i += 2 if rest[i] in VALUE_OPTIONS else 1
    if i >= len(rest) or rest[i] == "-":
        raise UsageError(f"python without a script: give one ({EXAMPLE}) or a module "
                         "(python -m pkg.train)")
    script = Path(rest[i])
    if not script.is_file():
        raise UsageError(f"script not found: {rest[i]}")
    return {"command": command, "script": str(script.resolve()), "name": script.stem}


def _torchrun_command(command: list[str], start: int) -> dict:
    """torchrun's training program checked as tuimon checks a script's, and the job's shape."""
    try:
        job = parse_torchrun(command, start)
    except TorchrunError as exc:
        raise UsageError(str(exc)) from None
    found = _launched(job.script_words, job.module, job.no_python)
    return {"command": command, "script": found["script"], "name": found["name"],
            "launcher": "torchrun", "nproc": job.nproc, "nnodes": job.max_nodes}


def _launched(program: list[str], module: bool, no_python: bool) -> dict:
    """A launcher's training program (torchrun's, accelerate's) checked as tuimon checks a
    script's: {"script", "name"}."""
    if module:
        return {"script": None, "name": program[0].rsplit(".", 1)[-1]}
    if no_python:  # the launcher runs the program itself: it must be Python all the same
        return check_command(program)
    script = Path(program[0])
    if not script.is_file():
        raise UsageError(f"script not found: {program[0]}")
    return {"script": str(script.resolve()), "name": script.stem}


def _accelerate_command(command: list[str], start: int) -> dict:
    """accelerate launch's training program checked as tuimon checks a script's: a launch of
    one process (accelerate's child is the run), or of several on this machine (torch's launcher
    in accelerate's process: a job of ranks, as torchrun's); one line for what tuimon cannot take."""
    try:
        launch = accelerate_launch.parse(command, start)
    except accelerate_launch.AccelerateError as exc:
        raise UsageError(str(exc)) from None
    if (why := launch.refused()) is not None:
        raise UsageError(f"accelerate launch with {why}")
    found = _launched(launch.script_words, launch.module, launch.no_python)
    shape = {"command": command, "script": found["script"], "name": found["name"],
             "launcher": "accelerate"}
    if launch.multi() is not None:
        return {**shape, "multi": True, "nproc": launch.nproc, "nnodes": 1}
    if launch.processes > 1:
        print(f"tuimon: accelerate launch starts one process here: its --num_processes "
              f"{launch.processes} counts only with --multi_gpu (or a multi-device config, or "
              "--mpirun_hostfile); the script runs as one process", file=sys.stderr)
    return shape


def _shebang(path: str) -> str | None:
    try:
        with open(path, "rb") as f:
            first = f.readline(256)
    except OSError:
        return None
    return first.decode("utf-8", "replace") if first.startswith(b"#!") and b"python" in first else None


def script_program(args: argparse.Namespace, command: list[str], fixed: dict[str, str] | None = None,
                   axes: dict[str, list[str]] | None = None) -> Program:
    """The checked command, as the run's settings name what runs; UsageError for a flag that a
    script owns itself. ``fixed`` / ``axes``: the --set knobs (the command is checked with every
    axis at its baseline value)."""
    if args.device != DEVICE:
        raise UsageError("--device: a script picks its own device (CUDA_VISIBLE_DEVICES chooses "
                         "the GPU it sees)")
    for flag, value in (("--batch-size", args.batch_size), ("--image-size", args.image_size)):
        if value is not None:
            raise UsageError(f"{flag} is a recipe's option; a script takes its own flags after --")
    if [p.strip() for p in args.precision.split(",") if p.strip()] != [PRECISION]:
        raise UsageError("--precision: a script owns its autocast, tuimon does not toggle it "
                         "(leave --precision out; the variants differ in compile mode)")
    module = args.compile_module
    if module is not None and not CLASS_NAME.fullmatch(module):
        raise UsageError(f"--compile-module {module!r}: a module's class name (RNNModel, or "
                         "mypkg.models.RNNModel)")
    if module is not None and args.no_auto_compile:
        raise UsageError("--compile-module and --no-auto-compile do not go together (one says "
                         "what to compile, the other to compile nothing)")
    knobs = {**(fixed or {}), **baseline(axes or {})}
    found = check_command(for_script(command, knobs)[0])
    # Each run's files kept apart in a mirror of this directory (control/files.py).
    return Program(command=tuple(command), script=found["script"], name=found["name"],
                   cwd=os.getcwd(), in_place=bool(getattr(args, "in_place", False)),
                   launcher=found.get("launcher"), multi=found.get("multi", False),
                   nproc=found.get("nproc"),
                   nnodes=found.get("nnodes"))


def script_hooks(args: argparse.Namespace, schedule: str, runs: int) -> ScriptHooks:
    """What only a script's hooks read; ``runs``: the session's processes."""
    hooks = ScriptHooks(auto_compile=not args.no_auto_compile, compile_module=args.compile_module,
                        notes=turn_notes(schedule, runs))
    if os.environ.get(NO_STEP_S):  # hidden, for tests: the no-optimizer-step note's delay
        hooks = replace(hooks, no_step_s=float(os.environ[NO_STEP_S]))
    return hooks


# Said in each run's run_started when a script's variants take turns (the interleaved schedule).
TURN_NOTE = ("taking turns, the script waits at its step boundary (inside optimizer.step(), or "
             "backward() when it has no optimizer; for its first turn: where it first shows "
             "training, usually its first batch) while other variants step: its own timers count "
             "those waits, tuimon's step times do not")


def turn_notes(schedule: str, runs: int) -> tuple[str, ...]:
    """The note a script's own timers need when its variants take turns (``runs``: processes)."""
    return (TURN_NOTE,) if schedule == "interleave" and runs > 1 else ()
