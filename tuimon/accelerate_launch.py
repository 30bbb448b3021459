"""Hugging Face's launcher on tuimon's side, without torch or accelerate: reading an
``accelerate launch`` command (its options, the training script after them, the config file it
names) and telling which of accelerate's launchers it will use.

``accelerate launch train.py`` on one process (a single GPU, ``--cpu``, any config whose
distributed type is not a multi-device one) runs the script as its child, ``python train.py``,
with its settings in the environment (mixed precision, ``dynamo_backend``, gradient
accumulation): tuimon hooks that child as the run (runner/script/hooks.py hands the settings on
through accelerate's own process). ``--num_processes`` alone does not make several processes:
without ``--multi_gpu`` (or a multi-device config) accelerate starts one, and tuimon says so.

A multi-process launch on one machine (``--multi_gpu``, ``--use_fsdp``, or such a config) is
torch's elastic launcher run inside accelerate's own process (its ``multi_gpu_launcher``): a
torchrun job, taken as one (each process a rank, the settings accelerate puts in the
environment inherited by each), its rendezvous port moved per variant as torchrun's is
(``with_port_offset``). What goes through another launcher or over several machines (DeepSpeed,
Megatron-LM, TPU, an MPI hostfile, ``--num_machines`` > 1) is refused in one line (``refused``).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

# accelerate launch's options that take no value (1.x; canonical: dashes); every other option
# takes one (a newer flag read as taking a value shows as a missing script, said in one line).
FLAG_OPTIONS = {
    "-h", "--help", "--quiet", "-q", "--cpu", "--multi-gpu", "--tpu", "--enable-cpu-affinity",
    "--dynamo-use-fullgraph", "--dynamo-use-dynamic", "--dynamo-use-regional-compilation",
    "--use-deepspeed", "--use-fsdp", "--use-parallelism-config", "--use-megatron-lm",
    "--same-network", "-m", "--module", "--no-python", "--tpu-cluster", "--no-tpu-cluster",
    "--tpu-use-sudo", "--downcast-bf16", "--fp8-use-autocast-during-eval", "--debug",
}
MODULES = ("accelerate.commands.launch", "accelerate.commands.accelerate_cli")
# A config's distributed types that make accelerate start several processes through torch's
# launcher (or another), not one child.
MULTI_TYPES = {"MULTI_GPU", "MULTI_NPU", "MULTI_MLU", "MULTI_SDAA", "MULTI_MUSA", "MULTI_XPU",
               "MULTI_HPU", "MULTI_NEURON", "FSDP", "DEEPSPEED", "MEGATRON_LM", "XLA"}
MULTI_FLAGS = ("--multi-gpu", "--use-fsdp", "--use-deepspeed", "--use-megatron-lm", "--tpu")
# What accelerate runs through another launcher than torch's elastic one in its own process, or
# that tuimon cannot measure: the option or config type, and why, in words.
REFUSED_FLAGS = {"--use-deepspeed": "DeepSpeed", "--use-megatron-lm": "Megatron-LM", "--tpu": "TPUs"}
REFUSED_TYPES = {"DEEPSPEED": "DeepSpeed", "MEGATRON_LM": "Megatron-LM", "XLA": "TPUs"}
MAIN_PROCESS_PORT = 29500  # accelerate's rendezvous port when none is given (prepare_multi_gpu_env)


class AccelerateError(ValueError):
    """An accelerate launch command tuimon cannot run; one line."""


@dataclass
class AccelerateLaunch:
    words: list[str]
    program: int  # index of the training script (or module) in words
    options: dict[str, str | bool] = field(default_factory=dict)
    config: dict[str, str] = field(default_factory=dict)  # the config file's top-level keys read
    at: dict[str, tuple[int, bool]] = field(default_factory=dict)  # option -> (word index, --x=v)

    @property
    def module(self) -> bool:
        return bool(self.options.get("-m") or self.options.get("--module"))

    @property
    def no_python(self) -> bool:
        return bool(self.options.get("--no-python"))

    @property
    def script_words(self) -> list[str]:
        return self.words[self.program:]

    @property
    def processes(self) -> int:
        """The processes asked for (``--num_processes``, else the config's), 1 when unsaid."""
        value = self.options.get("--num-processes") or self.config.get("num_processes") or 1
        try:
            return int(value)
        except (TypeError, ValueError):
            return 1

    @property
    def nproc(self) -> int | None:
        """A multi-process launch's processes (None: accelerate decides, one a GPU)."""
        given = self.options.get("--num-processes") or self.config.get("num_processes")
        return self.processes if given is not None else None

    def setting(self, option: str, key: str) -> str | None:
        """An option's value, else the config's ``key``, else None."""
        value = self.options.get(option)
        return str(value) if isinstance(value, str) else self.config.get(key)

    def refused(self) -> str | None:
        """Why tuimon cannot take this launch's processes, in words; None when it can (one process,
        or torch's elastic launcher on this machine)."""
        if self.options.get("--cpu"):
            if any(self.options.get(f) for f in MULTI_FLAGS):
                return ("--cpu and a multi-process flag do not go together (accelerate refuses "
                        "them); several processes on the CPU: ACCELERATE_USE_CPU=1 accelerate "
                        "launch --multi_gpu --num_processes N train.py")
            return None
        kind = self.config.get("distributed_type", "").upper()
        for what in [REFUSED_FLAGS[f] for f in REFUSED_FLAGS if self.options.get(f)] + (
                [REFUSED_TYPES[kind]] if kind in REFUSED_TYPES else []):
            return (f"{what}: tuimon takes the processes of a multi-GPU or FSDP launch as ranks, "
                    f"not {what}'s")
        if self.options.get("--mpirun-hostfile"):
            return ("--mpirun_hostfile: its processes are mpirun's; tuimon takes torchrun's (tuimon "
                    "run -- torchrun --nproc-per-node N train.py)")
        if int(self.setting("--num-machines", "num_machines") or 1) > 1:
            return ("several machines: run it under torchrun on each node instead (tuimon run -- "
                    "torchrun --nnodes N --node-rank K ... train.py; docs/ranks.md)")
        return None

    def with_port_offset(self, offset: int) -> list[str]:
        """The command with its rendezvous port (``--main_process_port``, the config's, else
        accelerate's 29500) moved by ``offset``, one port a variant (tuimon/torchrun.py); a port
        of 0 (a free one, accelerate's choice) stays."""
        words = list(self.words)
        port = self.setting("--main-process-port", "main_process_port")
        if offset == 0 or port == "0" or self.multi() is None:
            return words
        moved = str(int(port or MAIN_PROCESS_PORT) + offset)
        if "--main-process-port" in self.at:
            index, joined = self.at["--main-process-port"]
            if joined:
                words[index] = f"{words[index].split('=', 1)[0]}={moved}"
            else:
                words[index + 1] = moved
        else:  # the config's or accelerate's default: the option, given before the script, wins
            words[self.program:self.program] = ["--main_process_port", moved]
        return words

    def port_text(self, offset: int) -> str | None:
        """'rendezvous port 29501 (29500 + 1: ...)', or None when unmoved."""
        moved = self.with_port_offset(offset)
        if moved == self.words:
            return None
        port = int(self.setting("--main-process-port", "main_process_port") or MAIN_PROCESS_PORT)
        return (f"rendezvous port {port + offset} ({port} + {offset}: each variant's job gets its "
                "own port)")

    def multi(self) -> str | None:
        """Why accelerate will start several processes (an option or the config's type), or None
        when it starts the script as its one child."""
        for flag in MULTI_FLAGS:
            if self.options.get(flag):
                return flag.replace("-", "_").replace("__", "--", 1)
        if self.options.get("--mpirun-hostfile"):
            return "--mpirun_hostfile"
        if int(str(self.options.get("--num-machines") or self.config.get("num_machines") or 1)) > 1:
            return "several machines"
        kind = self.config.get("distributed_type", "").upper()
        if kind in MULTI_TYPES and not self.options.get("--cpu"):
            return f"the config's distributed_type {kind}"
        return None


def canonical(word: str) -> str:
    name = word.split("=", 1)[0]
    return name if not name.startswith("--") else name.replace("_", "-")


def is_accelerate(command: list[str], python: bool) -> int | None:
    """The index of accelerate launch's first option in ``command`` when it is one
    (``accelerate launch ...``, ``accelerate-launch ...``, or with ``python`` true ``python -m
    accelerate.commands.launch ...``), else None."""
    if not command:
        return None
    exe = command[0].rsplit("/", 1)[-1]
    if exe == "accelerate":
        return 2 if command[1:2] == ["launch"] else None
    if exe == "accelerate-launch":
        return 1
    if python:
        for i, word in enumerate(command[1:], 1):
            if word == "-m":
                module = command[i + 1] if i + 1 < len(command) else ""
                if module == MODULES[1]:
                    return i + 3 if command[i + 2:i + 3] == ["launch"] else None
                return i + 2 if module == MODULES[0] else None
            if not word.startswith("-"):
                return None
    return None


def parse(command: list[str], start: int) -> AccelerateLaunch:
    """Read accelerate launch's options from ``command[start:]`` up to the training program, and
    the config file it will read (``--config_file``, else accelerate's default one)."""
    found = AccelerateLaunch(list(command), len(command))
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
        if name in ("-h", "--help"):
            raise AccelerateError("accelerate launch --help is not a training job")
        if "=" in word:
            found.options[name], found.at[name] = word.split("=", 1)[1], (i, True)
            i += 1
        elif name in FLAG_OPTIONS:
            found.options[name] = True
            i += 1
        else:
            if i + 1 >= len(command):
                raise AccelerateError(f"accelerate launch {word} needs a value")
            found.options[name], found.at[name] = command[i + 1], (i, False)
            i += 2
    if found.program >= len(command):
        raise AccelerateError("accelerate launch without a training script (e.g. tuimon run -- "
                              "accelerate launch train.py)")
    found.config = read_config(found.options)
    return found


def config_path(options: dict) -> Path | None:
    """The config file accelerate launch reads: ``--config_file``, else its default one (none
    with ``--cpu``, as accelerate skips it then)."""
    given = options.get("--config-file")
    if isinstance(given, str):
        path = Path(given).expanduser()
        if not path.is_file():
            raise AccelerateError(f"accelerate launch --config_file {given}: no such file")
        return path
    if options.get("--cpu"):
        return None
    home = os.environ.get("HF_HOME") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "huggingface")
    default = Path(os.environ.get("ACCELERATE_CONFIG_FILE") or
                   os.path.join(home, "accelerate", "default_config.yaml"))
    return default if default.is_file() else None


_TOP_KEY = re.compile(r"^([A-Za-z_]+):\s*([^#\s]+)")


def read_config(options: dict) -> dict[str, str]:
    """The config's top-level scalar keys (distributed_type, num_processes, num_machines,
    mixed_precision, ...): enough to tell the launcher, without a YAML or JSON library."""
    path = config_path(options)
    if path is None:
        return {}
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise AccelerateError(f"cannot read accelerate's config {path}: {exc.strerror}") from None
    if path.suffix == ".json":
        return {k: str(v) for k, v in re.findall(r'"([A-Za-z_]+)"\s*:\s*"?([^",}\s]+)', text)}
    return {m.group(1): m.group(2).strip("'\"") for line in text.splitlines()
            if (m := _TOP_KEY.match(line))}
