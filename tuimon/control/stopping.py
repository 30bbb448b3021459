"""Stopping runs: the graceful stop line, SIGINT and SIGKILL after their deadlines, the hang
watch, and the --budget's end: the ``Stopper``, which the supervisor owns, on its loop thread.

Stopping a run: a ``stop`` line first, so it ends at the next step boundary and loses nothing;
one whose step outlasts ``Plan.stop_line_s`` (a long compile) gets SIGINT (it stops mid-step and
still reports what it measured); ``Plan.stop_grace_s`` later, SIGKILL. A runner still building
(no run_started yet) has measured nothing and gets SIGKILL at once: a SIGINT inside ``import
torch`` can be swallowed by an optional import and resurface as a bogus build failure (seen:
RecursionError in a half-imported numpy), which would abort the session. A queued run that is
stopped never starts. Either way it is recorded as finished, reason "stopped".
"""

from __future__ import annotations

import signal
import time

from tuimon import events
from tuimon.control.runs import PAUSED, STOPPED, Plan, Run, RunTable

TICK = 0.1  # seconds the loop waits for news before it looks at the queue and stop deadlines



def interrupt(signum, frame) -> None:
    """A SIGTERM handler for the process running ``Supervisor.run``: the loop then stops the
    runs as on Ctrl-C (by default SIGTERM would end it at once and orphan them)."""
    raise KeyboardInterrupt

class Stopper:
    """Stops runs of ``table`` (a queued one leaves the queue; a live one gets its stop line,
    then signals) and watches their deadlines, the hang watch and the budget; says what it did
    through ``record``."""

    def __init__(self, plan: Plan, table: RunTable, record) -> None:
        self.plan, self.table, self.record = plan, table, record
        self._budget_ends: float | None = None  # tuimon sweep --budget: when it is spent
        self._budget_spent = False
        # --until-known: the budget counts stepping only (control/until_known.py's clock); None:
        # wall time from the first tick (a sweep's)
        self.budget_clock = None

    @property
    def budget_spent(self) -> bool:
        return self._budget_spent

    def stoppable(self, r: Run) -> bool:
        return r.id in self.table.queue or self.controllable(r)

    def controllable(self, r: Run) -> bool:
        return r.id in self.table.live and not (r.state.ended or r.stop_asked)

    def stop(self, r: Run) -> None:
        if r.id in self.table.queue:
            self.table.queue.remove(r.id)
            self.table.set_state(r.id, STOPPED)
            self.record([events.make(events.FINISHED, r.id, reason="stopped")])  # never started
            return
        if not self.controllable(r):
            return
        r.stop_asked = True
        if r.state.started:
            r.child.send("stop")
            r.deadline = time.monotonic() + self.plan.stop_line_s + r.child.lead_time()
        else:  # still building: nothing to save, and a SIGINT there is not safe (see the top)
            r.escalation = 1
            self.escalate_run(r)

    def stop_everything(self) -> None:
        for run in list(self.table.queue):  # first, so nothing starts in their place
            self.stop(self.table.runs[run])
        for r in list(self.table.live.values()):
            self.stop(r)

    def kill_all(self) -> None:
        """A second Ctrl-C while winding down: SIGKILL to every live run at once."""
        for r in self.table.live.values():
            r.child.signal(signal.SIGKILL)

    def escalate(self) -> None:
        """Every loop tick: the budget, the stops whose deadline passed, the hang watch."""
        now = time.monotonic()
        self._watch_budget(now)
        for r in list(self.table.live.values()):
            if r.deadline is not None and now >= r.deadline:
                self.escalate_run(r)
            self._watch_hang(r, now)

    def escalate_run(self, r: Run) -> None:
        if r.escalation == 0:
            r.child.signal(signal.SIGINT)
            r.escalation, r.deadline = 1, time.monotonic() + self.plan.stop_grace_s
        else:
            r.child.signal(signal.SIGKILL)
            r.escalation, r.deadline = 2, None

    def _watch_budget(self, now: float) -> None:
        """--budget: once it is spent, every run stops (under interleave they have had the same
        share of it) and nothing queued starts. A sweep's counts from the first tick; an
        --until-known session's counts its stepping (``budget_clock``)."""
        if self.plan.deadline_s is None or self._budget_spent:
            return
        if self.budget_clock is not None:
            spent, what = self.budget_clock() >= self.plan.deadline_s, " of stepping"
        else:
            if self._budget_ends is None:
                self._budget_ends = now + self.plan.deadline_s
            spent, what = now >= self._budget_ends, ""
        if spent:
            self._budget_spent = True
            self.record([events.make(events.WARNING, budget=True,
                                     text=f"the --budget of {self.plan.deadline_s / 60:.1f} min{what} is "
                                     "spent: stopping the runs")])
            self.stop_everything()

    def _watch_hang(self, r: Run, now: float) -> None:
        """Say once when a started run sends no step for ``hang_s`` (compiling, paused or waiting
        for its turn does not count): it may be stuck; `dump` shows where."""
        if (self.plan.hang_s is None or r.last_step is None or r.hung_said or r.state.ended
                or r.state.compiling or self.table.state(r.id) == PAUSED or r.waiting_turn):
            return
        if now - r.last_step >= self.plan.hang_s:
            r.hung_said = True
            self.record([events.make(events.WARNING, r.id, hung=True,
                                     text=f"no step for {now - r.last_step:.0f} s: hung? "
                                     "(d dumps its Python stacks into its log)"
                                     + r.child.hang_text())])
