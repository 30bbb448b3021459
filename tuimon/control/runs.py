"""What a session runs: the ``Plan`` (variants, schedule, limits), the loop thread's record of
each run, the states a run goes through, and the profile options the supervisor checks before
it sends them (no torch here; the runner checks again)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from tuimon.control.child import Child
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
    recipe: Path
    variants: list[Variant]
    schedule: str = "sequential"  # or "parallel"
    runner_args: list[str] = field(default_factory=list)  # --steps, --seed, ... for every run
    cache_dir: Path | None = None  # None: a fresh Inductor cache per run (honest cold compile)
    stop_grace_s: float = 10.0  # after SIGINT, before SIGKILL
    interval: float | None = 1.0  # probe sampling period, seconds; None: no probes
    stop_line_s: float = 3.0  # after a stop line, before SIGINT (a step that does not end)
    torch_trace: bool = False  # also write torch's structured trace (TORCH_TRACE) for tlparse
    turn_steps: int | None = None  # interleaved schedule: steps a run takes per turn, or
    turn_s: float = 3.0  # (turn_steps None) seconds it steps per turn (runner/turns.py)
    quiet_only: bool = False  # keep steps measured under other processes' load out (stats)
    hang_s: float | None = 600.0  # warn when a stepping run sends no step for this long
    repeats: int = 1  # processes per variant, run in rounds (every variant once per round)
    # A script run (`tuimon run -- CMD`): command, script, name and the runner's settings (steps,
    # duration, seed, warm-up, profiler, auto_compile, set) for runner/script/; None: a recipe.
    script: dict | None = None
    nproc: int | None = None  # a recipe's variant as this many ranks under torchrun (DDP)
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


@dataclass
class Run:
    """The loop thread's record of one run."""

    id: str
    variant: Variant
    replaces: str | None = None
    after: str | None = None  # a restart starts only once the run it replaces has exited
    replicate: int | None = None  # --repeats: its round; a round starts once the one before ended
    child: Child | None = None
    stepping: bool = False  # run_started seen: the runner reads control lines from now on
    ended: bool = False  # its finished or failed event seen
    pause_asked: bool = False
    stop_asked: bool = False
    escalation: int = 0  # 1: SIGINT sent, 2: SIGKILL sent
    deadline: float | None = None  # when to escalate the stop, time.monotonic()
    waiting_turn: bool = False  # interleaved schedule: paused at the end of a turn
    # Hang watch: time.monotonic() of its last step, or of the news that it may step from now on
    # (started, a compile ended, resumed); None until it starts. Compiling does not count.
    last_step: float | None = None
    compiling: bool = False
    stepping_since: float | None = None  # since when it may step without a break (the sampler)
    hung_said: bool = False
    ranks_done_at: float | None = None  # a torchrun job: when every rank here had ended and exited
    exit_wait_said: bool = False  # ... and that torchrun still waits at its exit, said
    steps_seen: bool = False
    script_end: dict | None = None  # a script's finished event, held until its exit code is known
    port_offset: int | None = None  # a torchrun job: its rendezvous port's offset (torchrun.py)
    active_s: float = 0.0  # a torchrun job: seconds it stepped (its --duration, control/job_runs.py)
    # The handover (control/handover.py): it was ready for its turns (no longer starting); when
    # its end was seen; the wait past Plan.settle_s said.
    turned: bool = False
    ended_at: float | None = None
    settle_said: str | None = None
    children: bool = False  # a script's training runs in child processes (handover.py)
