"""When the machine passes from one run to another, so that no measured step shares it with
another run's start or end (issue 24). A mixin of ``Supervisor``, on its loop thread.

What one run does outside its steps can load the cores another run is measured on: building
(``import torch``, the model, the data), and ending (a script's own code after its last step: a
final test pass, a checkpoint; DataLoader workers joined, atexit handlers, the interpreter's
teardown; worker processes that outlive the runner). So:

- ``interleave``: the next turn is given only once no run is building (every live run is
  waiting for its turn, holds it, or is paused), none has ended and still runs, and no ended
  run's process group still holds a process (``Child.lingering``). A queued run (a variant
  added or restarted, the next ``--repeats`` round) starts only while no run steps; its build
  then holds the turns back. A compile happens inside its run's turn.
- ``sequential``: the next run starts once the last one's whole process group is gone.
- ``parallel``: the user asked for runs side by side; nothing waits.

Each wait lasts at most ``Plan.settle_s`` from the start it waits for: past it the schedule goes
on (a warning says so once), and what the run's processes use meanwhile is counted on the other
runs' steps as load from tuimon's own runs (the sampler's ``stepping``, analysis/stats/load.py).
"""

from __future__ import annotations

import time

from tuimon import events
from tuimon.control.runs import PAUSED, Run
from tuimon.control.schedule import next_turn

CHILDREN = ("its training runs in child processes tuimon does not hook, so it takes no turn: the "
            "other runs step beside it (its CPU counts as load on their steps)")


class Handover:
    """Uses the supervisor's ``_live``, ``_runs``, ``_turn``, ``_last_turn``, ``_exiting``,
    ``_sampler``, ``plan``, ``_record`` and ``_state``."""

    def _exited(self, r: Run) -> None:
        """At the reap: a run whose group still holds a process keeps the machine a while."""
        if self.plan.schedule != "parallel" and r.child.lingering():
            self._exiting[r.id] = time.monotonic()

    def _unsettled(self) -> list[Run]:
        """The runs whose start or end loads the machine now (within ``Plan.settle_s``)."""
        if self.plan.schedule == "parallel":
            return []
        now, out = time.monotonic(), []
        for run, since in list(self._exiting.items()):
            r = self._runs[run]
            if r.child.lingering() and self._settling(r, now, since, "its processes still run "
                                                      "after its runner exited"):
                out.append(r)
            else:
                del self._exiting[run]
        for r in list(self._live.values()):
            if r.ended:
                r.ended_at = r.ended_at or now
                what, since = "it is still ending after its last step", r.ended_at
            elif (self.plan.schedule == "interleave" and not r.turned and r.id != self._turn
                  and self._state(r.id) != PAUSED):
                if r.children:  # no start to wait for: its training runs in unhooked processes
                    if r.settle_said != CHILDREN:
                        r.settle_said = CHILDREN
                        self._record([events.make(events.WARNING, r.id, settle=True, text=CHILDREN)])
                    continue
                what, since = "it is still starting", r.child.started
            else:
                continue
            if self._settling(r, now, since, what):
                out.append(r)
        return out

    def _settling(self, r: Run, now: float, since: float, what: str) -> bool:
        if now - since < self.plan.settle_s:
            return True
        if r.settle_said != what:
            r.settle_said = what
            self._record([events.make(events.WARNING, r.id, settle=True, text=(
                f"{what} {now - since:.0f} s on: the other runs step beside it (its CPU counts as "
                "load on their steps)"))])
        return False

    def _children(self, r: Run, e: dict) -> None:
        """A script whose training runs in child processes tuimon does not hook (runner/script/
        children.py): it never takes a turn, so it is no start to wait for; and once it ended
        having measured nothing, another round of its variant would measure nothing either: its
        queued rounds are not run (--repeats, a --steps or --duration shared in rounds)."""
        r.children = True
        if not e.get("untimed"):
            return
        for run in [x for x in self._queue if self._runs[x].variant == r.variant]:
            self._record([events.make(events.WARNING, run, text=(
                f"not run: {r.id}'s training ran in child processes tuimon does not hook, so this "
                "process of the same variant would measure nothing either"))])
            self._stop_run(self._runs[run])

    def _may_start(self) -> bool:
        """Whether a queued run may start now (``startable`` says which)."""
        if self.plan.schedule == "interleave":  # not beside a run that steps
            return self._turn is None or self._state(self._turn) == PAUSED
        return self.plan.schedule == "parallel" or not self._unsettled()

    def _pass_turn(self) -> None:
        """Interleaved schedule: when no run holds the turn and the machine has settled, give it
        to the next waiting one."""
        if self.plan.schedule != "interleave":
            return
        if self._turn is not None and (self._turn not in self._live or self._runs[self._turn].ended):
            self._turn = None
        if self._turn is not None:
            return
        waiting = []
        for run, r in self._live.items():
            if r.waiting_turn:
                r.turned = True  # ready for its turns: no longer starting
                if not r.ended and self._state(run) != PAUSED:
                    waiting.append(run)
        if not waiting or self._unsettled():
            return
        nxt = next_turn(list(self._live), waiting, self._last_turn)
        r = self._runs[nxt]
        if r.child.send("resume"):
            r.waiting_turn, r.last_step = False, time.monotonic()
            r.stepping_since = r.last_step
            self._turn = self._last_turn = nxt
            if self._sampler:
                self._sampler.poke()  # a sample period starts with the turn

    def _stepping(self, since: float | None) -> set[str]:
        """The runs that stepped without a break since ``since`` (the sampler's previous tick;
        None: none), for the sampler's thread (a snapshot): a period that held a compile, a turn
        wait or a pause says nothing of a run's share of the cores (a compile's workers are no
        overuse), nor of the load other runs put beside its steps. Under interleave only the run
        holding the turn steps."""
        if since is None:
            return set()
        runs = {run for run, r in list(self._live.items()) if r.stepping and not r.compiling
                and not r.waiting_turn and self._state(run) != PAUSED
                and r.stepping_since is not None and r.stepping_since <= since}
        return runs & {self._turn} if self.plan.schedule == "interleave" else runs
