"""What a session's events say of each run: the one reducer every reader of a session uses.

``SessionState.add(e)`` folds an event into its run's ``RunState`` (a torchrun job's has a
``RankState`` a rank) and the session's own facts, and returns the steps it completed: a run's
step, or the job steps a rank's event completed (job_steps.py). Each reader keeps only what it
adds: the supervisor its processes and clocks (control/runs.py), the statistics their figures
(analysis/stats/), the TUI its charts (ui/model.py), headless mode its progress rows. How to add
an event kind: docs/development.md.

It lives in sessiondir/, the floor both houses stand on: what runs a session (control/) and what
reads one (analysis/, report/, ui/, headless) may both import it. It imports events.py alone: no
torch, no textual.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from tuimon import events
from tuimon.sessiondir.job_steps import Event, JobSteps, Joined

QUEUED, RUNNING, DONE, STOPPED, FAILED = "queued", "running", "done", "stopped", "failed"
NOT_RUN = "not run"  # ended before it started: a round not run, a queued run stopped
KILLED = "killed"  # a rank that ended without a word (torchrun tore it down, or it died)
ENDED = (DONE, STOPPED, FAILED, NOT_RUN)
PAUSED = "paused"


def failure_text(e: Event) -> str:
    """What a failed event says the run died of, in one line."""
    return e.get("what") or f"{e.get('error', 'Error')}: {e.get('message', '')}".rstrip(": ")


@dataclass(eq=False)
class RankState:
    """One rank of a torchrun job, as its events (those that carry ``rank``) say."""

    rank: int
    status: str = RUNNING  # running | done | stopped | failed | killed
    phase: str = "building"  # its latest: building, compiling, warmup, steady, paused (steps say theirs)
    turn: bool = False  # paused for the interleaved schedule's turn, not by the user
    compiling: bool = False  # from its compiling phase to the next phase it says (steps aside)
    compile_id: str | None = None
    started: Event | None = None  # its run_started: host, local_rank, node_rank, pid, world_size, ...
    end: Event | None = None  # its finished or failed event
    steps: int = 0  # step events
    last_i: int = -1  # its last step's index, and that step's end (wall clock)
    last_t: float | None = None
    loss: float | None = None  # its latest loss
    turns: int = 0  # turns it waited for

    @property
    def state(self) -> str:
        return self.phase if self.status == RUNNING else self.status

    @property
    def ended(self) -> bool:
        """It said finished or failed."""
        return self.end is not None

    @property
    def active(self) -> bool:
        return self.status == RUNNING

    @property
    def error(self) -> str | None:
        return failure_text(self.end) if self.status == FAILED and self.end else None


@dataclass(eq=False)
class RunState:
    """One run, as its events say; a torchrun job's from its own events and its ranks'."""

    run: str
    mode: str = "?"
    precision: str = "?"
    axes: dict[str, str] = field(default_factory=dict)  # its --set axis values
    replicate: int | None = None  # --repeats: its round, and how many processes its variant has
    repeats: int | None = None
    status: str = QUEUED  # queued | running | done | stopped | failed | not run
    phase: str | None = None  # its latest (steps say theirs); a job's state is its ranks'
    turn: bool = False  # paused for its turn (interleaved schedule)
    compiling: bool = False  # from a compiling phase to the next phase (a job: a live rank's)
    reason: str | None = None  # its finished event's
    started: Event | None = None  # its run_started (a job's: its lowest rank's)
    started_t: float | None = None  # its first phase (a job: its first rank's start)
    ended_t: float | None = None  # its first finished, failed or exit
    wall_s: float | None = None  # its process's life (run_exited)
    steps: int = 0  # its last step's index + 1 (a job's: the steps joined)
    last_t: float | None = None  # its latest step's end
    warnings: list[str | None] = field(default_factory=list)  # a job's ranks' too
    failure: Event | None = None  # its failed event (a job: its own, at its end)
    error: str | None = None  # what it failed of (a job: its first failed rank, until its end)
    hung: float | None = None  # t of a hang warning (no step for --hang-timeout), until a later step
    hung_s: float | None = None  # stopped while hung: seconds from its last step to the stop
    # The compile under way: its id, torch's phase in it, since when (t).
    compile_id: str | None = None
    compile_phase: str | None = None
    compile_backward: bool = False
    compile_since: float | None = None
    profiling: bool = False  # a capture window is open
    profiles: list[Event] = field(default_factory=list)  # captures done or failed (a job's: "rank")
    turns: int = 0  # turns it waited for (the first included)
    # Its pauses, turn waits too: [paused at, resumed at or None].
    pauses: list[list[float | None]] = field(default_factory=list)
    ranks: dict[int, RankState] = field(default_factory=dict)
    job: JobSteps | None = None  # a torchrun job's steps, joined from its ranks'

    @property
    def state(self) -> str:
        """What it is doing, in one word: queued, building, compiling, warmup, steady, paused,
        waiting turn, ending (a job whose every rank ended), done, stopped or failed."""
        if self.status == FAILED:
            return FAILED
        if self.status in ENDED:
            return STOPPED if self.reason == "stopped" else DONE
        if self.ranks:
            return job_state(self.ranks)
        if self.phase == PAUSED and self.turn:
            return "waiting turn"
        return self.phase or QUEUED

    @property
    def active(self) -> bool:
        return self.state not in (DONE, STOPPED, FAILED)

    @property
    def ended(self) -> bool:
        """Its own finished or failed event came (a job's: at torchrun's exit)."""
        return self.status in ENDED

    @property
    def stepped(self) -> bool:
        return self.steps > 0 or any(rs.steps for rs in self.ranks.values())

    @property
    def notes(self) -> list[str]:
        return list((self.started or {}).get("notes") or [])

    @property
    def world_size(self) -> int | None:
        return max(((rs.started or {}).get("world_size") or 0 for rs in self.ranks.values()),
                   default=0) or None


def job_state(ranks: dict[int, RankState]) -> str:
    """A job's state as its ranks make it: failed once one failed; paused / waiting for its turn
    once every rank is; compiling while one compiles; else the ranks' common state."""
    if any(r.status == FAILED for r in ranks.values()):
        return FAILED
    live = [r for r in ranks.values() if r.active]
    if not live:
        return "ending"  # every rank has ended; torchrun's exit brings the job's own end event
    if all(r.phase == PAUSED for r in live):
        return "waiting turn" if all(r.turn for r in live) else PAUSED
    if any(r.phase == "compiling" for r in live):
        return "compiling"
    for state in ("building", "warmup", "steady"):
        if any(r.phase == state for r in live):
            return state
    return live[0].phase


class SessionState:
    """The reducer: ``add`` each event in order. ``new_run`` makes a run's record (a reader may
    extend RunState with what it adds); ``joined`` is told of each job step joined (its ranks'
    steps by rank, the job's step)."""

    def __init__(self, new_run: Callable[[str], RunState] = RunState, joined: Joined | None = None) -> None:
        self.runs: dict[str, RunState] = {}
        self.warnings: list[str | None] = []  # session-wide
        self.ended: str | None = None  # the session's status once it ended
        self._new_run, self._joined = new_run, joined

    def add(self, e: Event) -> list[Event]:
        kind = e["type"]
        run = e.get("run")
        if run is None:
            return self._session(e, kind)
        r = self.runs.get(run)
        if r is None:  # its first event
            r = self.runs[run] = self._new_run(run)
        if e.get("rank") is not None:
            return self._rank(r, e, kind)
        if kind == events.STEP:
            _step(r, e)
            return [e]
        if kind == events.PHASE:
            phase, turn = e.get("phase"), bool(e.get("turn"))
            r.phase, r.turn, r.compiling = phase, turn, phase == "compiling"
            r.turns += turn
            if r.status == QUEUED:
                r.status = RUNNING
            _compile_news(r, e)
            _pause(r, e, phase == PAUSED)
        elif kind == events.RUN_QUEUED:
            r.replicate, r.repeats = e.get("replicate"), e.get("repeats")
            r.axes = {str(k): str(v) for k, v in (e.get("axes") or {}).items()}
            _identity(r, e)
        elif kind == events.RUN_STARTED:
            r.status, r.started = RUNNING, e
            _identity(r, e)
        elif kind in (events.FINISHED, events.FAILED):
            return self._end(r, e, kind)
        elif kind == events.RUN_EXITED:
            r.wall_s = e.get("seconds")
            _ended(r, e)
        else:
            self._news(r, e, kind, True)
        return []

    def _session(self, e: Event, kind: str) -> list[Event]:
        if kind == events.WARNING and e.get("text") not in self.warnings:
            self.warnings.append(e.get("text"))
        elif kind == events.SESSION_ENDED:
            self.ended = e.get("status")
            # Ranks that never said goodbye: their jobs' steps join with what came.
            return [s for r in self.runs.values() if r.job for s in _joined(r, r.job.end())]
        return []

    def _end(self, r: RunState, e: Event, kind: str) -> list[Event]:
        t = e.get("t")
        if kind == events.FAILED:
            r.status, r.failure, r.error = FAILED, e, failure_text(e)
        else:
            stopped = e.get("reason") == "stopped"
            if r.status != FAILED:  # a job's other node may finish after one failed (merge.py)
                r.status = NOT_RUN if r.status == QUEUED else STOPPED if stopped else DONE
            r.reason = e.get("reason")
            if stopped and r.hung is not None and t is not None:
                r.hung_s = round(t - (r.last_t if r.last_t is not None else r.hung), 1)
        _ended(r, e)
        return _joined(r, r.job.end()) if r.job else []  # a job's end: its last steps

    def _news(self, r: RunState, e: Event, kind: str, own: bool) -> None:
        """What a run, or any of its ranks, says for the whole run (``own``: the run itself or
        its lowest rank)."""
        if kind == events.WARNING:
            if e.get("hung"):
                r.hung = e.get("t")
            if e.get("text") not in r.warnings:
                r.warnings.append(e.get("text"))
        elif kind == events.PROFILE:
            r.profiling = e.get("state") == "started"
            if e.get("state") in ("done", "failed") and e.get("capture"):
                r.profiles.append({k: v for k, v in e.items() if k not in ("type", "run")})
        elif kind == events.COMPILE_PHASE and own:
            _compile_news(r, e)
        elif kind == events.CONTROL and e.get("action") == "catch_up" and r.job:
            r.job.hold(e["first"], e["last"])

    def _rank(self, r: RunState, e: Event, kind: str) -> list[Event]:
        """A rank's event: its own record, and what it says for the job (its lowest rank speaks
        for the job's device, notes and the compile under way)."""
        k = e["rank"]
        rs = r.ranks.get(k) or r.ranks.setdefault(k, RankState(k))
        job = r.job = r.job or JobSteps(r.run, self._joined)
        if r.status == QUEUED:
            r.status = RUNNING
        if kind == events.STEP:
            rs.steps, rs.last_i, rs.last_t = rs.steps + 1, e["i"], e.get("t")
            if e.get("loss") is not None:
                rs.loss = e["loss"]
            if rs.phase != PAUSED:
                rs.phase = e.get("phase", rs.phase)
            return _joined(r, job.step(k, e, rs.status != KILLED))
        lead, joined = k == min(r.ranks), []
        if kind == events.PHASE:
            rs.phase, rs.turn = e.get("phase", rs.phase), bool(e.get("turn"))
            rs.compiling = rs.phase == "compiling"
            rs.compile_id = e.get("compile_id") if rs.compiling else None
            rs.turns += rs.turn
            if lead:
                _compile_news(r, e)
        elif kind == events.RUN_STARTED:
            rs.started = e
            job.active.add(k)
            if lead or r.started is None:
                r.started = e
            r.started_t = r.started_t or e.get("t")
        elif kind in (events.FINISHED, events.FAILED):
            rs.end, rs.status = e, (FAILED if kind == events.FAILED
                                    else STOPPED if e.get("reason") == "stopped" else DONE)
            r.error = r.error or (f"rank {k}: {rs.error}" if rs.error else None)
            joined = job.gone(k)
        elif kind == events.RUN_EXITED and e.get("said") is False:
            rs.status = KILLED if rs.active else rs.status
            joined = job.gone(k)
        else:
            self._news(r, e, kind, lead)
            return []
        r.compiling = any(x.compiling for x in r.ranks.values() if x.active)
        return _joined(r, joined)


def _step(r: RunState, e: Event) -> None:
    r.steps = e["i"] + 1
    t = e.get("t")
    if t is not None:
        if r.hung is not None and t > r.hung:
            r.hung = None  # steps sent at the stop ended before the warning
        if r.last_t is None or t > r.last_t:
            r.last_t = t
    if r.phase != PAUSED or r.turn:
        r.phase, r.turn = e.get("phase", r.phase), False


def _joined(r: RunState, steps: list[Event]) -> list[Event]:
    for s in steps:
        _step(r, s)
    return steps


def _identity(r: RunState, e: Event) -> None:
    r.mode, r.precision = e.get("mode") or r.mode, e.get("precision") or r.precision


def _compile_news(r: RunState, e: Event) -> None:
    """The compile under way, as a phase or a compile phase says (a job's: its lowest rank's)."""
    t = e.get("t")
    if e["type"] == events.COMPILE_PHASE:
        if e.get("compile_id") != r.compile_id or r.compile_since is None:
            r.compile_since = t
        r.compile_id, r.compile_phase = e.get("compile_id"), e.get("phase")
    else:
        if r.started_t is None:
            r.started_t = t
        if e.get("phase") != "compiling":
            r.compile_id = r.compile_phase = r.compile_since = None
            return
        if e.get("compile_id") and e.get("compile_id") != r.compile_id:
            r.compile_since = t
        r.compile_id = e.get("compile_id") or r.compile_id
    r.compile_backward = bool(e.get("backward"))


def _ended(r: RunState, e: Event) -> None:
    """Its finished, failed or exit: its first is its end; a pause ends there."""
    if e.get("t") is not None and (r.ended_t is None or e["t"] < r.ended_t):
        r.ended_t = e["t"]
    _pause(r, e, False)


def _pause(r: RunState, e: Event, paused: bool) -> None:
    """A run's pauses, turn waits too: opened by its paused phase, closed by its next phase or
    its end (a job's ranks' phases are theirs)."""
    open_ = bool(r.pauses) and r.pauses[-1][1] is None
    if paused and not open_:
        r.pauses.append([e["t"], None])
    elif open_ and not paused:
        r.pauses[-1][1] = e["t"]
