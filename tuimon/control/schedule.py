"""Who starts and who steps next: the sequential, parallel and interleaved schedules, and
--repeats rounds. ``startable`` and ``next_turn`` are pure functions of the queue and the live
runs; the ``Schedule``, which the supervisor owns, holds the turn (interleave) and asks the
handover (control/handover.py) whether the machine has settled before it passes it on."""

from __future__ import annotations

import time
from collections.abc import Callable

from tuimon import cores
from tuimon.control.handover import Handover
from tuimon.control.runs import PAUSED, Plan, Run, RunTable


def startable(schedule: str, queue: list[str], live: dict[str, Run],
              runs: dict[str, Run]) -> tuple[list[str], int | None]:
    """(the queued runs to start now, in order; the threads each gets, None: the default)."""
    rounds = [runs[run].replicate for run in [*queue, *live]]
    first_round = min((k for k in rounds if k is not None), default=None)
    ready = [run for run in queue if runs[run].after not in live
             and runs[run].replicate in (None, first_round)]
    if not ready:
        return [], None
    if schedule == "interleave":
        return ready, None  # all start (build) now, but only the run holding the turn steps
    if schedule == "parallel":
        # Split the cores among the runs live from now on; running ones keep their count.
        return ready, max(1, cores.usable() // (len(live) + len(ready)))
    if live:
        return [], None  # sequential: one at a time (a paused run keeps the slot)
    return ready[:1], None


def next_turn(order: list[str], waiting: list[str], last: str | None) -> str:
    """Interleaved schedule: the waiting run that comes next after ``last``, round-robin in the
    order the runs were started, so drift hits every variant alike."""
    after = order.index(last) if last in order else -1
    return min(waiting, key=lambda run: (order.index(run) - after - 1) % len(order))


class Schedule:
    """The plan's schedule over ``table``: which queued runs start now, and (interleave) which
    run holds the turn. ``turn_began``: called as a turn begins (the sampler's new period)."""

    def __init__(self, plan: Plan, table: RunTable, handover: Handover,
                 turn_began: Callable[[], None] = lambda: None) -> None:
        self.plan, self.table, self.handover, self.turn_began = plan, table, handover, turn_began
        self.interleave = plan.schedule == "interleave"
        self._holder: str | None = None  # the run stepping now
        self._last: str | None = None

    @property
    def holder(self) -> str | None:
        """Interleave: the run that holds the turn (None: nobody steps)."""
        return self._holder

    def startable(self) -> tuple[list[str], int | None]:
        """The queued runs to start now, and their threads; none while they may not start."""
        ready, threads = startable(self.plan.schedule, self.table.queue, self.table.live,
                                   self.table.runs)
        return (ready, threads) if ready and self._may_start() else ([], None)

    def _may_start(self) -> bool:
        if self.interleave:  # not beside a run that steps
            return self._holder is None or self.table.state(self._holder) == PAUSED
        return self.plan.schedule == "parallel" or not self.handover.unsettled(None)

    def over(self, run: str) -> None:
        """``run``'s turn is over (it paused at its end, or it is ready for its first)."""
        if self._holder == run:
            self._holder = None

    def pass_turn(self) -> None:
        """Interleave: when no run holds the turn and the machine has settled, give it to the
        next waiting one."""
        if not self.interleave:
            return
        live = self.table.live
        if self._holder is not None and (self._holder not in live or live[self._holder].state.ended):
            self._holder = None
        if self._holder is not None:
            return
        waiting = []
        for run, r in live.items():
            if r.waiting_turn:
                self.handover.ready(run)  # no longer starting
                if not r.state.ended and self.table.state(run) != PAUSED:
                    waiting.append(run)
        if not waiting or self.handover.unsettled(self._holder):
            return
        nxt = next_turn(list(live), waiting, self._last)
        r = live[nxt]
        if r.child is not None and r.child.send("resume"):
            r.waiting_turn, r.last_step = False, time.monotonic()
            r.stepping_since = r.last_step
            self._holder = self._last = nxt
            self.turn_began()  # a sample period starts with the turn

    def stepping(self, since: float | None) -> set[str]:
        """The runs that stepped without a break since ``since`` (the sampler's previous tick;
        None: none), for the sampler's thread (a snapshot): a period that held a compile, a turn
        wait or a pause says nothing of a run's share of the cores (a compile's workers are no
        overuse), nor of the load other runs put beside its steps. Under interleave only the run
        holding the turn steps."""
        if since is None:
            return set()
        runs = {run for run, r in list(self.table.live.items()) if r.state.started and not r.state.compiling
                and not r.waiting_turn and self.table.state(run) != PAUSED
                and r.stepping_since is not None and r.stepping_since <= since}
        return runs & {self._holder} if self.interleave else runs
