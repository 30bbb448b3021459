"""--until-known, the running side: rounds queued one at a time, a round ended as soon as its
processes have what the answer needs, a look after each round, and the session ended once the
answer is known, the design's last round is reached, or --budget's stepping is spent.

What each process still needs, what the rounds say and how far the answer is are the analysis's
decisions (analysis/stats/known.py, from a Collector folded here as the supervisor records each
event: the same statistics every view shows); this object acts on them with what exists: stop
lines through the Stopper (a run ends at its next step boundary, a script's code after its loop
runs as on --steps), the next round through the supervisor's queue, and ``known`` events into
the store, so the views and the summary read the same record.

The budget counts *stepping*: the time some run steps (not building, not compiling, not waiting
for its turn), so a long cold compile does not eat the answer's rounds; the Stopper stops every
run when it is spent (``clock`` is its budget clock). The design's last round is set after round 2,
from the stepping a warm round took: the rounds the budget leaves room for (sequential.py:
spending over fewer planned rounds gives narrower early intervals).
"""

from __future__ import annotations

import math
import time
from dataclasses import replace

from tuimon import events
from tuimon.analysis import Collector, known
from tuimon.control.runs import FAILED, PAUSED, Plan, RunTable

PROGRESS_S = 5.0  # the live record again at least this often while its figures move
KEEP_STEPS = 4096  # steps kept per run for the looks (the TUI keeps as many): a bounded memory
STEPPING = ("warmup", "steady")


class UntilKnown:
    def __init__(self, plan: Plan, table: RunTable, record, stopper, queue_round, may_go_on) -> None:
        spec = plan.answer["until_known"]
        self.design = known.Design.from_dict(spec)
        self.budget_s: float | None = spec.get("budget_s")
        self.plan, self.table, self.record, self.stopper = plan, table, record, stopper
        self.queue_round, self.may_go_on = queue_round, may_go_on
        self.collector = Collector(keep_steps=KEEP_STEPS)
        self.tracks: dict[str, known.ProcessTrack] = {}
        self.round = 1
        self.stepped_s = 0.0  # the budget's clock
        self._tick_at: float | None = None
        self._round_at = time.monotonic()  # the round's start (wall), for a round's length
        self._round_stepped = 0.0  # the stepping clock at the round's start
        self.round_s: list[float] = []  # each complete round's wall time
        self.round_stepped: list[float] = []  # ... and its stepping
        self.last = known.point("rounds", rounds=0)  # the latest look
        self._mine: set[str] = set()  # runs this object stopped (others: the user's)
        self._said: tuple = ()
        self._said_at = 0.0
        self._last_eta: float | None = None
        self.over = False

    def clock(self) -> float:
        return self.stepped_s

    # ---- from the supervisor's loop -----------------------------------------------------------
    def fold(self, e: dict) -> None:
        """Each recorded event (the supervisor's fold)."""
        self.collector.add(e)
        run = e.get("run")
        if run is not None and e["type"] in (events.STEP, events.ANATOMY) and e.get("rank") in (None, 0):
            self.tracks.setdefault(run, known.ProcessTrack()).add(e)

    def tick(self) -> None:
        """Every loop tick: the stepping clock, the round's end once it has what it needs, the
        live record."""
        now = time.monotonic()
        if self._tick_at is not None and any(self._steps(r) for r in self.table.live.values()):
            self.stepped_s += now - self._tick_at
        self._tick_at = now
        if self.over:
            return
        states = self._states()
        if states:
            self._stop_ready(states)
        self._progress(now, states)

    def exited(self, run: str) -> None:
        """A run was reaped: when its round has no run left, the look, then the next round or
        the end."""
        r = self.table.runs.get(run)
        if self.over or r is None or r.replicate != self.round or self._round_runs(live_or_queued=True):
            return
        self.round_s.append(time.monotonic() - self._round_at)
        self.round_stepped.append(self.stepped_s - self._round_stepped)
        if self.round == 2 and self.budget_s:
            self._design()
        self.last = known.look(self.collector.summary(), self.design)
        self.record([events.make(events.KNOWN, action="look", known=self._record(self.last).to_dict())])
        why = self._why()
        if why is not None:
            self._end(why)
            return
        self.round += 1
        self._round_at, self._round_stepped = time.monotonic(), self.stepped_s
        self.queue_round(self.round)

    def _why(self) -> str | None:
        """Why the session ends after this round's look, or None: the next round. A run that
        failed ends it (a variant that fails would fail again, round after round, until the cap)."""
        mine = self._round_runs()
        if self.last.code in known.ANSWERS:
            return "known"
        if self.stopper.budget_spent:
            return "budget"
        if any(self.table.state(x) == FAILED for x in mine):
            return "failed"
        if any(self.table.runs[x].stop_asked and x not in self._mine for x in mine) or not self.may_go_on():
            return "user"
        return "max_rounds" if self.round >= self.design.max_rounds else None

    # ---- helpers ----------------------------------------------------------------------------------
    def _steps(self, r) -> bool:
        s = r.state
        return (s.started is not None and not s.compiling and s.phase in STEPPING and not r.waiting_turn
                and self.table.state(r.id) != PAUSED)

    def _round_runs(self, live_or_queued: bool = False) -> list[str]:
        runs = self.table.runs
        mine = [x for x, r in runs.items() if r.replicate == self.round]
        if live_or_queued:
            return [x for x in mine if x in self.table.live or x in self.table.queue]
        return mine

    def _states(self) -> dict[str, known.Point]:
        """What each live process of the round still needs."""
        out = {}
        for run in self._round_runs(live_or_queued=True):
            r = self.table.runs[run]
            if run in self.table.queue or r.stop_asked or r.state.ended:
                continue
            track = self.tracks.get(run) or known.ProcessTrack()
            out[run] = known.process_state(track, r.state.compiling, self.round == 1, self.budget_s)
        return out

    def _stop_ready(self, states: dict) -> None:
        """Interleave: the round's processes stop together once all are ready (they took turns
        over the same minutes, which is what pairs them); the other schedules: each when ready."""
        ready = [run for run, s in states.items() if s.code == "ready"]
        if self.plan.schedule == "interleave" and len(ready) < len(states):
            return
        for run in ready:
            self._mine.add(run)
            self.stopper.stop(self.table.runs[run])

    def _design(self) -> None:
        """The rounds the budget leaves room for at round 2's stepping, once, before any look:
        the design's last round (never fewer than its first look's, nor more than it plans)."""
        per_round = self.round_stepped[-1]
        left = max(0.0, self.budget_s - self.stepped_s)
        room = 2 + int(left / per_round) if per_round > 0 else self.design.max_rounds
        rounds = max(self.design.min_rounds, min(self.design.max_rounds, room))
        if rounds != self.design.max_rounds:
            self.design = replace(self.design, max_rounds=rounds)
            self.record([events.make(events.KNOWN, action="design", max_rounds=rounds)])

    def _round_wall(self) -> float | None:
        """A whole round's wall time: the latest warm one's (round 1 compiles cold)."""
        warm = self.round_s[1:]
        return warm[-1] if warm else (self.round_s[-1] if self.round_s else None)

    def _record(self, point, now_state: known.Point | None = None, about: str | None = None) -> known.Known:
        base = known.progress(point, now_state or known.point("ready", eta_s=0.0), self.design, self.round,
                              self._round_wall(), about)
        return replace(base, budget_s=self.budget_s, stepped_s=round(self.stepped_s, 1))

    def _progress(self, now: float, states: dict) -> None:
        """The live record, when what it says changed (or its estimate, every PROGRESS_S)."""
        if not states:
            return
        run = min(states, key=lambda x: _ORDER.index(states[x].code))  # the least advanced
        rs = known.round_state(list(states.values()))
        label = self.table.runs[run].variant.label
        record = self._record(self.last, rs, about=label)
        key = (record.code, record.round, record.rounds, record.about)
        if key == self._said and now - self._said_at < PROGRESS_S:
            return
        if key == self._said and _close(record.eta_s, self._last_eta):
            return
        self._said, self._said_at, self._last_eta = key, now, record.eta_s
        self.record([events.make(events.KNOWN, action="progress", known=record.to_dict())])

    def _end(self, why: str) -> None:
        self.over = True
        final = replace(self._record(self.last), stopped=why, eta_s=None)
        self.record([events.make(events.KNOWN, action="end", known=final.to_dict())])
        if why != "known":
            self.stopper.stop_everything()


_ORDER = ("building", "compiling", "settling", "epoch", "steps", "ready")


def _close(a: float | None, b: float | None) -> bool:
    """Two estimates that would read alike (within a tenth, or both unknown)."""
    if a is None or b is None:
        return a is b
    return math.isclose(a, b, rel_tol=0.1, abs_tol=2.0)
