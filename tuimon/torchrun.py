"""torch's launcher on tuimon's side, without torch: reading a ``torchrun`` command (the options
it takes, the training script after them), giving each variant's job its own rendezvous port,
and the command that runs a recipe's variant as N ranks.

A variant's job is torchrun's own process (the elastic agent) and its workers. When two
variants' jobs are alive at once (the interleaved and parallel schedules) they must not share a
rendezvous port: ``--standalone`` and a single-node torchrun without a port pick a free one
themselves; a port the user gives (``--master-port``, ``--rdzv-endpoint HOST:PORT``, or a
multi-node job's default 29500) is moved by the run's *port offset*: the variant's place in
the plan (0, 1, 2, ...). Every node's tuimon, given the same options, gives the same variant the
same port. A multi-process ``accelerate launch`` is a torchrun job too (``job_command``; its port
accelerate's ``--main_process_port``, tuimon/accelerate_launch.py). Shared by the command check
(cli/script.py) and the supervisor; imports nothing heavy.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field

from tuimon import accelerate_launch

# Options of torch.distributed.run that take a value (each also spelt with underscores).
VALUE_OPTIONS = {
    "--nnodes", "--nproc-per-node", "--rdzv-backend", "--rdzv-endpoint", "--rdzv-id", "--rdzv-conf",
    "--max-restarts", "--monitor-interval", "--start-method", "--event-log-handler", "--role",
    "--log-dir", "-r", "--redirects", "-t", "--tee", "--log-line-prefix-template",
    "--local-ranks-filter", "--duplicate-stdout-filters", "--duplicate-stderr-filters",
    "--node-rank", "--master-addr", "--master-port", "--local-addr", "--logs-specs",
    "--numa-binding", "--signals-to-handle", "--shutdown-timeout",
}
FLAG_OPTIONS = {"--standalone", "-m", "--module", "--no-python", "--run-path", "--virtual-local-rank"}
MODULES = ("torch.distributed.run",)  # python -m torch.distributed.run is torchrun
MASTER_PORT = 29500  # torchrun's default static rendezvous port
C10D_PORT = 29400  # the c10d rendezvous port when an endpoint names none


class TorchrunError(ValueError):
    """A torchrun command tuimon cannot run; one line."""


@dataclass
class Torchrun:
    """What tuimon needs from a torchrun command: ``options`` (canonical dashed name -> value,
    True for flags) and where the training program starts in ``words``."""

    words: list[str]  # the whole command (torchrun or python -m torch.distributed.run ...)
    start: int  # index of the first torchrun option in words
    program: int  # index of the training script (or module) in words
    options: dict[str, str | bool] = field(default_factory=dict)
    at: dict[str, tuple[int, bool]] = field(default_factory=dict)  # option -> (word index, --x=v)

    @property
    def module(self) -> bool:
        return bool(self.options.get("--module"))

    @property
    def no_python(self) -> bool:
        return bool(self.options.get("--no-python"))

    @property
    def script_words(self) -> list[str]:
        """The training program and its arguments, as its own command would read."""
        return self.words[self.program:]

    @property
    def nproc(self) -> int | None:
        """Ranks on this node (None: torchrun decides, e.g. ``auto``)."""
        value = str(self.options.get("--nproc-per-node", "1"))
        return int(value) if value.isdigit() else None

    @property
    def max_nodes(self) -> int:
        value = str(self.options.get("--nnodes", "1"))
        try:
            return int(value.split(":")[-1])
        except ValueError:
            return 1

    @property
    def multi_node(self) -> bool:
        return self.max_nodes > 1

    def with_port_offset(self, offset: int) -> list[str]:
        """The command with its rendezvous port moved by ``offset`` (see the module's text)."""
        words = list(self.words)
        if offset == 0 or self.options.get("--standalone"):
            return words
        if self.options.get("--rdzv-endpoint"):
            host, _, port = str(self.options["--rdzv-endpoint"]).rpartition(":")
            if not host or not port.isdigit():  # "host" alone: the c10d default port
                host, port = str(self.options["--rdzv-endpoint"]), str(C10D_PORT)
            self._set(words, "--rdzv-endpoint", f"{host}:{int(port) + offset}")
        elif self.options.get("--master-port"):
            self._set(words, "--master-port", str(int(self.options["--master-port"]) + offset))
        elif self.multi_node:  # a static rendezvous on torchrun's default port
            words[self.program:self.program] = ["--master-port", str(MASTER_PORT + offset)]
        return words

    def port_text(self, offset: int) -> str | None:
        """'rendezvous port 29501 (29500 + 1: one port per variant)', or None when unmoved."""
        moved = self.with_port_offset(offset)
        if moved == self.words:
            return None
        again = parse(moved, self.start)
        endpoint = again.options.get("--rdzv-endpoint") or again.options.get("--master-port")
        port = str(endpoint).rpartition(":")[2]
        return (f"rendezvous port {port} ({int(port) - offset} + {offset}: each variant's job "
                "gets its own port)")

    def _set(self, words: list[str], option: str, value: str) -> None:
        index, joined = self.at[option]
        if joined:
            words[index] = f"{words[index].split('=', 1)[0]}={value}"
        else:
            words[index + 1] = value


def canonical(word: str) -> str:
    name = word.split("=", 1)[0]
    return name if name in ("-r", "-t", "-m") else name.replace("_", "-")


def is_torchrun(command: list[str], python: bool) -> int | None:
    """The index of torchrun's first option in ``command`` when it is a torchrun command
    (``torchrun ...``, or with ``python`` true ``python [-u ...] -m torch.distributed.run ...``),
    else None."""
    if not command:
        return None
    exe = command[0].rsplit("/", 1)[-1]
    if exe == "torchrun":
        return 1
    if python:
        for i, word in enumerate(command[1:], 1):
            if word == "-m":
                return i + 2 if command[i + 1:i + 2] and command[i + 1] in MODULES else None
            if not word.startswith("-"):
                return None
    return None


def parse(command: list[str], start: int) -> Torchrun:
    """Read torchrun's options from ``command[start:]`` up to the training program."""
    found = Torchrun(list(command), start, len(command))
    i = start
    while i < len(command):
        word = command[i]
        if word == "--":
            found.program = i + 1
            break
        if not word.startswith("-") or word == "-":
            found.program = i
            break
        name = canonical(word)
        if name == "--print-completion":
            raise TorchrunError("torchrun --print-completion is not a training job")
        if name in FLAG_OPTIONS:
            found.options["--module" if name == "-m" else name] = True
            i += 1
            continue
        if "=" in word:
            found.options[name], found.at[name] = word.split("=", 1)[1], (i, True)
            i += 1
        elif name in VALUE_OPTIONS:
            if i + 1 >= len(command):
                raise TorchrunError(f"torchrun {word} needs a value")
            found.options[name], found.at[name] = command[i + 1], (i, False)
            i += 2
        else:  # an option of a newer torch, taken for a flag
            found.options[name] = True
            i += 1
    if found.program >= len(command):
        raise TorchrunError("torchrun without a training script (e.g. tuimon run -- torchrun "
                            "--nproc-per-node 2 train.py)")
    if found.options.get("--run-path"):
        raise TorchrunError("torchrun --run-path runs the script inside torchrun's own processes: "
                            "leave it out")
    return found


def job_command(command: list[str]) -> Torchrun | accelerate_launch.AccelerateLaunch:
    """A script's job command read: torchrun's, or an ``accelerate launch`` of several processes
    (torch's launcher inside accelerate's process). Either moves its rendezvous port per variant
    (``with_port_offset``, ``port_text``) and says its ranks on this node (``nproc``)."""
    start = accelerate_launch.is_accelerate(command, True)
    if start is not None:
        return accelerate_launch.parse(command, start)
    return parse(command, is_torchrun(command, True) or 1)


def recipe_command(nproc: int, runner_args: list[str], python: str | None = None) -> list[str]:
    """A recipe's variant as ``nproc`` ranks on this machine, through torch's own launcher
    (a standalone rendezvous on a free port): each rank is ``python -m tuimon.runner``."""
    return [python or sys.executable, "-m", "torch.distributed.run", "--standalone",
            "--nproc-per-node", str(nproc), "-m", "tuimon.runner", *runner_args]
