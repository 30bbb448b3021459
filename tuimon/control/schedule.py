"""Who starts next and who steps next: the sequential, parallel and interleaved schedules, and
--repeats rounds. Pure functions of the queue and the live runs; the supervisor acts on them."""

from __future__ import annotations

import os

from tuimon.control.runs import Run


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
        return ready, max(1, (os.cpu_count() or 1) // (len(live) + len(ready)))
    if live:
        return [], None  # sequential: one at a time (a paused run keeps the slot)
    return ready[:1], None


def next_turn(order: list[str], waiting: list[str], last: str | None) -> str:
    """Interleaved schedule: the waiting run that comes next after ``last``, round-robin in the
    order the runs were started, so drift hits every variant alike."""
    after = order.index(last) if last in order else -1
    return min(waiting, key=lambda run: (order.index(run) - after - 1) % len(order))
