"""What a session runs: the ``Plan`` (the runs' settings, variants, schedule, limits), each run's
record and the table of them, the states a run goes through, and the profile options the
supervisor checks before it sends them (no torch here; the runner checks again)."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path

from tuimon.control.child import Child
from tuimon.sessiondir.run_state import RunState
from tuimon.settings import TURN_S, Program, RunSettings
from tuimon.variants import Variant

PROFILES = "profiles"  # the session's subdirectory for profiler captures' chrome traces
PROFILE_OPTIONS = {"wait": 0, "warmup": 0, "active": 1}  # whole numbers, at least this


def check_profile_options(options: dict) -> None:
    """ValueError for options the runner would refuse (it checks again)."""
    for key, value in options.items():
        if key in PROFILE_OPTIONS:
            if not isinstance(value, int) or isinstance(value, bool) or value < PROFILE_OPTIONS[key]:
                raise ValueError(f"profile option {key} must be a whole number >= {PROFILE_OPTIONS[key]}")
        elif key == "backward":
            if value not in (True, False, "all"):
                raise ValueError('profile option backward must be True, False or "all"')
        else:
            raise ValueError(f"unknown profile option {key!r}")


QUEUED, RUNNING, PAUSED, DONE, FAILED, STOPPED = "queued", "running", "paused", "done", "failed", "stopped"


@dataclass
class Plan:
    # Every run's settings (tuimon/settings.py): what runs, its length, seed, profiler, ...; the
    # supervisor derives each run's own at its start (its id, variant, round, turns).
    settings: RunSettings
    variants: list[Variant]
    schedule: str = "sequential"  # or "parallel", "interleave"
    cache_dir: Path | None = None  # None: a fresh Inductor cache per run (honest cold compile)
    stop_grace_s: float = 10.0  # after SIGINT, before SIGKILL
    interval: float | None = 1.0  # probe sampling period, seconds; None: no probes
    stop_line_s: float = 3.0  # after a stop line, before SIGINT (a step that does not end)
    torch_trace: bool = False  # also write torch's structured trace (TORCH_TRACE) for tlparse
    turn_steps: int | None = None  # interleaved schedule: steps a run takes per turn, or
    turn_s: float = TURN_S  # (turn_steps None) seconds it steps per turn (runner/turns.py)
    quiet_only: bool = False  # keep steps measured under other processes' load out (stats)
    hang_s: float | None = 600.0  # warn when a stepping run sends no step for this long
    # What the verdict needs to know, recorded in session_started: axes (key -> values, the
    # first the baseline), horizon, loss_tolerance; a sweep's sweep, budget and skipped variants.
    answer: dict = field(default_factory=dict)
    deadline_s: float | None = None  # tuimon sweep --budget: every run is stopped this long after the start
    env: dict = field(default_factory=dict)  # set in every run's environment (--pin-malloc)
    # The longest the schedule waits for a run's start or end before others step (handover.py).
    settle_s: float = 60.0
    # Warm start (control/warm.py): policy rounds (rounds 2..K start warm from round 1's compile
    # artifacts) or cold (--cold); extra: --warm's extra warm process when a variant runs in one;
    # from: dir | bundle (what a warm start is seeded from); source: --cache-from's cache_source
    # event fields (control/cache_source.py), None without it.
    warm: dict = field(default_factory=dict)

    @property
    def repeats(self) -> int:
        """Processes per variant, run in rounds (every variant once per round)."""
        return self.settings.length.repeats

    @property
    def program(self) -> Program:
        """What runs: a recipe, or a script's command (``program.is_script``), as a job or not."""
        return self.settings.program


@dataclass
class Run:
    """The loop thread's record of one run: what it runs, its process, what was asked of it and
    its clocks. What its recorded events say is ``state`` (sessiondir/run_state.py)."""

    id: str
    variant: Variant
    replaces: str | None = None
    after: str | None = None  # a restart starts only once the run it replaces has exited
    replicate: int | None = None  # --repeats: its round; a round starts once the one before ended
    child: Child | None = None
    pause_asked: bool = False
    stop_asked: bool = False
    escalation: int = 0  # 1: SIGINT sent, 2: SIGKILL sent
    deadline: float | None = None  # when to escalate the stop, time.monotonic()
    waiting_turn: bool = False  # interleaved schedule: paused at the end of a turn
    # Hang watch: time.monotonic() of its last step, or of the news that it may step from now on
    # (started, a compile ended, resumed); None until it starts. Compiling does not count.
    last_step: float | None = None
    stepping_since: float | None = None  # since when it may step without a break (the sampler)
    hung_said: bool = False
    script_end: dict | None = None  # a script's finished event, held until its exit code is known
    state: RunState = field(kw_only=True)


class RunTable:
    """The session's runs: each one's record (``runs``), the queue in start order (``queue``) and
    the runs with a process (``live``), all the loop thread's (the sampler's thread reads
    ``live`` as a snapshot); and each run's state and variant, read from any thread (the TUI's,
    the daemon's) under the lock. Once closed, no run is added."""

    def __init__(self) -> None:
        self.runs: dict[str, Run] = {}
        self.queue: list[str] = []
        self.live: dict[str, Run] = {}
        self._lock = threading.Lock()
        self._states: dict[str, str] = {}
        self._variants: dict[str, Variant] = {}
        self._closed = False

    def allocate(self, variant: Variant) -> str:
        """A run id unique in the session: the variant's, then -2, -3, ... (queued from now)."""
        with self._lock:
            if self._closed:
                raise RuntimeError("the session is closed")
            run, n = variant.run_id, 1
            while run in self._states:
                n += 1
                run = f"{variant.run_id}-{n}"
            self._states[run] = QUEUED
            self._variants[run] = variant
            return run

    def forget(self, run: str) -> None:
        """A run allocated but never queued (the session ended first)."""
        with self._lock:
            self._states.pop(run, None)

    def variant_of(self, run: str) -> Variant:
        with self._lock:
            if run not in self._variants:
                raise KeyError(f"no run {run!r} in this session")
            return self._variants[run]

    def close(self) -> None:
        with self._lock:
            self._closed = True

    def state(self, run: str) -> str | None:
        with self._lock:
            return self._states.get(run)

    def set_state(self, run: str, state: str) -> None:
        with self._lock:
            self._states[run] = state

    def states(self) -> dict[str, str]:
        with self._lock:
            return dict(self._states)
