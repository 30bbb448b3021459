"""Stopping runs: the graceful stop line, SIGINT and SIGKILL after their deadlines, the hang
watch, and winding everything down on Ctrl-C. A mixin of ``Supervisor``, on its loop thread.

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
from tuimon.control.runs import PAUSED, STOPPED, Run

TICK = 0.1  # seconds the loop waits for news before it looks at the queue and stop deadlines


class Stopping:
    """Uses the supervisor's ``_queue``, ``_live``, ``_runs``, ``plan`` and its ``_record`` /
    ``_pump`` / ``_state`` / ``_set_state``."""

    def _wind_down(self) -> None:
        """Stop every run and wait for the children; a second Ctrl-C kills them at once."""
        try:
            self._stop_everything()
            while self._live:
                self._escalate()
                self._pump(TICK)
        except KeyboardInterrupt:
            pass
        finally:
            for r in self._live.values():
                r.child.signal(signal.SIGKILL)
            while self._live:
                self._pump(TICK)

    def _stoppable(self, r: Run) -> bool:
        return r.id in self._queue or self._controllable(r)

    def _controllable(self, r: Run) -> bool:
        return r.id in self._live and not (r.ended or r.stop_asked)

    def _stop_run(self, r: Run) -> None:
        if r.id in self._queue:
            self._queue.remove(r.id)
            self._set_state(r.id, STOPPED)
            self._record([events.make(events.FINISHED, r.id, reason="stopped")])  # never started
            return
        if not self._controllable(r):
            return
        r.stop_asked = True
        if r.stepping:
            r.child.send("stop")
            r.deadline = time.monotonic() + self.plan.stop_line_s + r.child.lead_time()
        else:  # still building: nothing to save, and a SIGINT there is not safe (see the top)
            r.escalation = 1
            self._escalate_run(r)

    def _stop_everything(self) -> None:
        for run in list(self._queue):  # first, so nothing starts in their place
            self._stop_run(self._runs[run])
        for r in list(self._live.values()):
            self._stop_run(r)

    def _escalate(self) -> None:
        now = time.monotonic()
        self._watch_budget(now)
        for r in list(self._live.values()):
            if r.deadline is not None and now >= r.deadline:
                self._escalate_run(r)
            self._watch_hang(r, now)

    def _watch_budget(self, now: float) -> None:
        """tuimon sweep --budget: once the budget is spent, every run stops (under interleave they
        have had the same share of it) and nothing queued starts. Called from the loop's start."""
        if self.plan.deadline_s is None:
            return
        if getattr(self, "_budget_ends", None) is None:
            self._budget_ends = now + self.plan.deadline_s
        elif now >= self._budget_ends and not getattr(self, "_budget_spent", False):
            self._budget_spent = True
            self._record([events.make(events.WARNING, budget=True,
                                      text=f"the --budget of {self.plan.deadline_s / 60:.1f} min is "
                                      "spent: stopping the runs")])
            self._stop_everything()

    def _watch_hang(self, r: Run, now: float) -> None:
        """Say once when a started run sends no step for ``hang_s`` (compiling, paused or waiting
        for its turn does not count): it may be stuck; `dump` shows where."""
        if (self.plan.hang_s is None or r.last_step is None or r.hung_said or r.ended or r.compiling
                or self._state(r.id) == PAUSED or r.waiting_turn):
            return
        if now - r.last_step >= self.plan.hang_s:
            r.hung_said = True
            self._record([events.make(events.WARNING, r.id, hung=True,
                                      text=f"no step for {now - r.last_step:.0f} s: hung? "
                                      "(d dumps its Python stacks into its log)"
                                      + r.child.hang_text())])

    def _escalate_run(self, r: Run) -> None:
        if r.escalation == 0:
            r.child.signal(signal.SIGINT)
            r.escalation, r.deadline = 1, time.monotonic() + self.plan.stop_grace_s
        else:
            r.child.signal(signal.SIGKILL)
            r.escalation, r.deadline = 2, None
