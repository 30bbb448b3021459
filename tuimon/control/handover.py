"""When the machine passes from one run to another, so that no measured step shares it with
another run's start or end (issue 24): the ``Handover``, which the supervisor owns, on its loop
thread; the schedule (control/schedule.py) asks it before it passes a turn or starts a run.

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
from tuimon.control.runs import PAUSED, Plan, Run, RunTable

CHILDREN = ("its training runs in child processes tuimon does not hook, so it takes no turn: the "
            "other runs step beside it (its CPU counts as load on their steps)")


class Handover:
    """Which runs of ``table`` still start or end (``unsettled``), each wait at most
    ``Plan.settle_s``; says so through ``record``. ``stop``: how a queued run is stopped."""

    def __init__(self, plan: Plan, table: RunTable, record, stop) -> None:
        self.plan, self.table, self.record, self.stop = plan, table, record, stop
        self._exiting: dict[str, float] = {}  # reaped runs whose group still runs: since when
        self._ready: set[str] = set()  # ready for its turns: no longer starting
        self._ended_at: dict[str, float] = {}  # when its end was seen
        self._said: dict[str, str] = {}  # the wait past settle_s said, per run
        self._children: set[str] = set()  # a script's training runs in child processes

    def exited(self, r: Run) -> None:
        """At the reap: a run whose group still holds a process keeps the machine a while."""
        if self.plan.schedule != "parallel" and r.child.lingering():
            self._exiting[r.id] = time.monotonic()

    def exiting(self) -> list[str]:
        """The reaped runs whose processes are still waited for."""
        return list(self._exiting)

    def ready(self, run: str) -> None:
        """It waits for its turn: it has started (interleave)."""
        self._ready.add(run)

    def unsettled(self, holder: str | None) -> list[Run]:
        """The runs whose start or end loads the machine now (within ``Plan.settle_s``);
        ``holder``: the run holding the turn (interleave)."""
        if self.plan.schedule == "parallel":
            return []
        now, out = time.monotonic(), []
        for run, since in list(self._exiting.items()):
            r = self.table.runs[run]
            if r.child.lingering() and self._settling(r, now, since, "its processes still run "
                                                      "after its runner exited"):
                out.append(r)
            else:
                del self._exiting[run]
        for r in list(self.table.live.values()):
            if r.state.ended:
                since = self._ended_at.setdefault(r.id, now)
                what = "it is still ending after its last step"
            elif (self.plan.schedule == "interleave" and r.id not in self._ready and r.id != holder
                  and self.table.state(r.id) != PAUSED):
                if r.id in self._children:  # no start to wait for: it trains in unhooked processes
                    if self._said.get(r.id) != CHILDREN:
                        self._said[r.id] = CHILDREN
                        self.record([events.make(events.WARNING, r.id, settle=True, text=CHILDREN)])
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
        if self._said.get(r.id) != what:
            self._said[r.id] = what
            self.record([events.make(events.WARNING, r.id, settle=True, text=(
                f"{what} {now - since:.0f} s on: the other runs step beside it (its CPU counts as "
                "load on their steps)"))])
        return False

    def children(self, r: Run, e: dict) -> None:
        """A script whose training runs in child processes tuimon does not hook (runner/script/
        children.py): it never takes a turn, so it is no start to wait for; and once it ended
        having measured nothing, another round of its variant would measure nothing either: its
        queued rounds are not run (--repeats, a --steps or --duration shared in rounds)."""
        self._children.add(r.id)
        if not e.get("untimed"):
            return
        runs = self.table.runs
        for run in [x for x in self.table.queue if runs[x].variant == r.variant]:
            self.record([events.make(events.WARNING, run, text=(
                f"not run: {r.id}'s training ran in child processes tuimon does not hook, so this "
                "process of the same variant would measure nothing either"))])
            self.stop(runs[run])
