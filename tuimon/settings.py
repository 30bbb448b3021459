"""A run's settings: one frozen record of everything a run's child needs, and each default once.

The CLI builds it once from the command line (cli/run.py ``run_settings``); the plan carries it
(control/runs.py); the supervisor derives each run's own with ``dataclasses.replace`` (its id,
variant, round, turns, threads: control/supervisor.py) and hands it to the child in one form,
JSON in ``TUIMON_SETTINGS`` (``environ``), for a recipe (``python -m tuimon.runner``) and for a
script (the hooks' sitecustomize) alike. The child reads it back as this record (``from_env``);
``meta.json`` keeps the session's as written (``run_settings``).

A new knob is one field here with its default. Flat names are unique across the groups, so
``make`` / ``but`` take them as keywords (``make(recipe=..., steps=40, profile_at=5)``).

A leaf, as ``events.py``: no torch, no textual; both sides import it.
"""

from __future__ import annotations

import dataclasses
import json
import os
from dataclasses import dataclass, field

from tuimon.envvars import SETTINGS as SETTINGS_ENV
from tuimon.lengths import process_length

# ---- the defaults, each written once (cli/run_flags.py's flags take them from here) ----------
MODE = "eager"
PRECISION = "fp32"
SEED = 0
DEVICE = "auto"  # cuda when torch sees one
WARMUP = "auto"  # the statistics find where step times settle (MSER-5); a number fixes it
# Steps labelled warm-up by the child itself under "auto" (the statistics find the rest).
AUTO_WARMUP_STEPS = 1
# Processes a variant when tuimon sets the runs' length (a recipe, or a script with --steps /
# --duration / --budget): the spread between processes is measured (stats/noise.py), pooled over
# the variants; 3 a variant give two variants 4 degrees of freedom (t = 2.8).
AUTO_REPEATS = 3
TURN_S = 3.0  # seconds of stepping per turn (interleaved schedule, without --turn-steps)
PROFILE_WINDOW = (1, 2, 3)  # a capture's steps: waited, recorded and dropped, kept
PROFILE_BACKWARD = "off"  # off | eager | all: backward attribution in captures
NO_STEP_S = 60.0  # a script that has not stepped an optimizer by then is told so
# --until-known (the default for a script given no length): the cap on its stepping, and "the
# same" within this margin either way (analysis/stats/known.py)
UNTIL_KNOWN_BUDGET_S = 900.0
MARGIN_PCT = 3.0


def window_text(window: tuple[int, int, int]) -> str:
    return ",".join(str(x) for x in window)


Pairs = tuple[tuple[str, str], ...]


# ---- the groups --------------------------------------------------------------------------------
@dataclass(frozen=True)
class Program:
    """What runs: a recipe file, or a script's command (checked by cli/script.py)."""

    recipe: str | None = None  # python -m tuimon.runner loads it
    command: tuple[str, ...] = ()  # a script's, as given; a run's has its {KEY} knobs filled in
    script: str | None = None  # the script's file (None: python -m / -c)
    name: str | None = None  # what the session and the runs call it
    cwd: str | None = None  # where the user started it: each run's files apart in a mirror of it
    in_place: bool = False  # --in-place: every run in the user's directory itself
    launcher: str | None = None  # "torchrun" (each run a job of ranks) or "accelerate"
    # accelerate launch starting several processes (torch's launcher inside accelerate's own
    # process: each run a job of ranks, as under torchrun); False: its one child is the run
    multi: bool = False
    nproc: int | None = None  # ranks per node (None: the launcher decides)
    nnodes: int | None = None  # the most nodes a script's torchrun asks for

    @property
    def is_script(self) -> bool:
        return bool(self.command)

    @property
    def is_job(self) -> bool:
        return self.launcher == "torchrun" or (self.launcher == "accelerate" and self.multi)


@dataclass(frozen=True)
class Length:
    """How long: the whole length asked for, and this process's round (tuimon/lengths.py)."""

    steps: int | None = None  # None: the recipe's own for its device, or the script's own end
    duration: float | None = None
    repeats: int = 1  # processes per variant, in rounds
    round: int | None = None  # this process's round of them
    steady_duration: bool = False  # --duration counts stepping only, compiles aside (a budget)
    until_known: bool = False  # no length: the supervisor stops each process (control/until_known.py)

    def this_process(self, own_steps: int | None = None) -> tuple[int | None, float | None]:
        """(steps, duration) this process runs; ``own_steps``: a recipe's own, when neither
        --steps nor --duration was given (under --until-known: none, it runs until stopped)."""
        if self.until_known:
            return None, None
        asked = self.steps if self.steps is not None or self.duration is not None else own_steps
        return process_length(asked, self.duration, self.repeats, self.round)


@dataclass(frozen=True)
class Turns:
    """This run's turns under the interleaved schedule (runner/turns.py); none by default."""

    turn_steps: int = 0  # steps per turn
    turn_s: float = 0.0  # else seconds of stepping per turn
    turn_first: bool = False  # a rank of a job: wait for the first turn; the supervisor ends each


@dataclass(frozen=True)
class Profiling:
    profile_at: int | None = None  # a capture from this step in every run
    profile_window: tuple[int, int, int] = PROFILE_WINDOW
    profile_backward: str = PROFILE_BACKWARD
    auto_profile: bool = True  # the automatic diagnosis capture
    count_flops: bool = True  # a step's FLOPs counted once, on an extra step (runner/flops.py)
    profile_dir: str | None = None  # where captures' chrome traces go (the session's profiles/)


@dataclass(frozen=True)
class ScriptHooks:
    """What only a script's hooks read (runner/script/)."""

    auto_compile: bool = True  # compile the trained module of a script that never compiles
    compile_module: str | None = None  # --compile-module: the class to compile instead
    notes: tuple[str, ...] = ()  # said in run_started
    no_step_s: float = NO_STEP_S
    files: dict | None = None  # its files kept apart: root, apart, hide, exempt (control/files.py)


@dataclass(frozen=True)
class Process:
    """This process's own ends of its channel to the supervisor."""

    event_fd: int | None = None
    control_fd: int | None = None
    channel: str | None = None  # a rank of a job: the session's rank socket (control/rank_hub.py)
    token: str | None = None
    # "rank": set by a script's torchrun agent for its workers; "launched": by accelerate
    # launch's own process for the script it starts (runner/script/hooks.py)
    role: str | None = None
    agent_pid: int | None = None
    # Forked by the fork server (runner/forkserver.py): the seconds of imports it did once for
    # every run, which this process's start therefore does not show.
    preloaded_s: float | None = None


GROUPS = {"program": Program, "length": Length, "turns": Turns, "profile": Profiling,
          "hooks": ScriptHooks, "process": Process}


@dataclass(frozen=True)
class RunSettings:
    program: Program = field(default_factory=Program)
    run: str = ""  # the run id (the supervisor's)
    mode: str = MODE
    precision: str = PRECISION
    axes: Pairs = ()  # the variant's --set axis values
    knobs: Pairs = ()  # the fixed --set knobs
    fixes: tuple[str, ...] = ()  # tuimon try's fixes applied from outside (tuimon/fixes.py)
    length: Length = field(default_factory=Length)
    warmup: str = WARMUP
    seed: int | None = SEED  # None: nothing seeded (a bench's hooks)
    device: str = DEVICE
    batch_size: int | None = None  # None: the recipe's DEFAULTS
    image_size: int | None = None
    turns: Turns = field(default_factory=Turns)
    profile: Profiling = field(default_factory=Profiling)
    hooks: ScriptHooks = field(default_factory=ScriptHooks)
    threads: int | None = None  # torch's threads (parallel schedule: the cores shared)
    process: Process = field(default_factory=Process)

    @property
    def fixed_warmup(self) -> int:
        """Steps the child itself labels warm-up."""
        return AUTO_WARMUP_STEPS if self.warmup == WARMUP else int(self.warmup)

    @classmethod
    def make(cls, **flat) -> RunSettings:
        return cls().but(**flat)

    def but(self, **flat) -> RunSettings:
        """This record with fields changed, named flat (``steps=``, ``profile_at=``, ``run=``)."""
        own = {k: flat.pop(k) for k in list(flat) if k in _TOP or k in GROUPS}
        for group, kind in GROUPS.items():
            mine = {k: flat.pop(k) for k in list(flat) if k in _NAMES[kind]}
            if mine:
                own[group] = dataclasses.replace(own.get(group, getattr(self, group)), **mine)
        if flat:
            raise TypeError(f"no run setting {', '.join(sorted(flat))}")
        return dataclasses.replace(self, **own)

    # ---- the one serialised form -------------------------------------------------------------
    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), separators=(",", ":"))

    def environ(self) -> dict[str, str]:
        """What a child's environment carries: ``python -m tuimon.runner`` needs nothing else."""
        return {SETTINGS_ENV: self.to_json()}

    @classmethod
    def from_dict(cls, data: dict) -> RunSettings:
        return _build(cls, data)

    @classmethod
    def from_json(cls, text: str) -> RunSettings:
        return cls.from_dict(json.loads(text))

    @classmethod
    def from_env(cls) -> RunSettings | None:
        """This child's settings, taken out of the environment (its own child processes then
        start without them); None when it was not started by tuimon."""
        text = os.environ.pop(SETTINGS_ENV, None)
        return None if text is None else cls.from_json(text)


_NAMES = {kind: {f.name for f in dataclasses.fields(kind)} for kind in GROUPS.values()}
_TOP = {f.name for f in dataclasses.fields(RunSettings)} - set(GROUPS)


def _build(kind, data: dict):
    """``kind`` from its dict (JSON's lists back to tuples); ValueError on a name it lacks."""
    unknown = set(data) - {f.name for f in dataclasses.fields(kind)}
    if unknown:
        raise ValueError(f"{kind.__name__}: unknown settings {', '.join(sorted(unknown))}")
    values = {}
    for f in dataclasses.fields(kind):
        if f.name not in data:
            continue
        value = data[f.name]
        if f.name in GROUPS:
            value = _build(GROUPS[f.name], value)
        elif isinstance(value, list):
            value = tuple(tuple(x) if isinstance(x, list) else x for x in value)
        values[f.name] = value
    return kind(**values)
