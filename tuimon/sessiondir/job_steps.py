"""A torchrun job's steps, joined from its ranks' steps at the same index (the reducer's part for
jobs, run_state.py).

The job's step is the *slowest* rank's (its time; the batch counts of every rank; the mean of
their losses), complete once every rank still going has sent it, so every reader then treats
the job's steps as any run's. A step some ranks spent waiting in a catch-up (control/job_child.py)
or in a validation pass is a gap.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from typing import Any

from tuimon import events

Event = dict[str, Any]  # one event (tuimon/events.py)
MAX_PENDING = 4096  # step indices waiting for a rank, at most: past it, the oldest joins as is

# Told of each joined step: (the ranks' steps by rank, the job's step); the statistics keep each
# rank's times from it (analysis/stats/ranks.py).
Joined = Callable[[dict[int, Event], Event], None]


class JobSteps:
    def __init__(self, run: str, joined: Joined | None = None) -> None:
        self.run = run
        self.joined = joined
        self.active: set[int] = set()  # ranks that may still send steps
        self.pending: dict[int, dict[int, Event]] = {}
        self.next_i = 0  # the lowest step index not joined yet
        self.held: list[tuple[int, int]] = []  # catch-ups: step indices [first, last) kept apart

    def step(self, rank: int, e: Event, alive: bool) -> list[Event]:
        """A rank's step (``alive``: not a rank already ended without a word); the job steps it
        completed, in order."""
        if alive:
            self.active.add(rank)
        if e["i"] >= self.next_i:
            self.pending.setdefault(e["i"], {})[rank] = e
        return self.complete()

    def gone(self, rank: int) -> list[Event]:
        """A rank ended: the steps that waited only for it."""
        self.active.discard(rank)
        return self.complete()

    def hold(self, first: int, last: int) -> None:
        """A catch-up (control/job_child.py): steps [first, last) of some ranks held a wait."""
        self.held.append((first, last))

    def end(self) -> list[Event]:
        """The job ended: every step still waiting joins with the ranks that sent it."""
        self.active.clear()
        return self.complete()

    def complete(self) -> list[Event]:
        out = []
        while self.pending:
            steps = self.pending.get(self.next_i)
            if steps is None:
                if self.next_i > max(self.pending):
                    break
                self.next_i += 1
                continue
            if not self.active <= steps.keys() and len(self.pending) < MAX_PENDING:
                break
            out.append(self._join(self.next_i, self.pending.pop(self.next_i)))
            self.next_i += 1
        return out

    def _join(self, i: int, steps: dict[int, Event]) -> Event:
        slowest = max(steps, key=lambda r: steps[r]["ms"])
        s = steps[slowest]
        losses = [x["loss"] for x in steps.values() if x.get("loss") is not None]
        job: Event = {"type": events.STEP, "run": self.run, "t": max(x.get("t", 0.0) for x in steps.values()),
               "i": i, "ms": s["ms"], "data_ms": s.get("data_ms", 0.0),
               "n": sum(x.get("n") or 0 for x in steps.values()),
               "loss": statistics.fmean(losses) if losses else None,
               "phase": "steady" if all(x.get("phase") == "steady" for x in steps.values()) else "warmup",
               "slowest": slowest}
        compile_ms = max((x.get("compile_ms") or 0.0) for x in steps.values())
        if compile_ms:
            job["compile_ms"] = compile_ms
        # The job's split: the rank the others waited for (the last to reach backward(); its
        # backward holds no wait), else the slowest; under DDP every rank's step ends together,
        # so the slowest by time is any of them.
        pres = {r: x["pre_ms"] for r, x in steps.items() if x.get("pre_ms") is not None}
        critical = steps[max(pres, key=lambda r: pres[r])] if pres else s
        if critical.get("ph") is not None:
            job["ph"] = critical["ph"]
        profiled = next((x["profiled"] for x in steps.values() if x.get("profiled")), None)
        if profiled:
            job["profiled"] = profiled
        if any(x.get("gap") for x in steps.values()) or any(a <= i < b for a, b in self.held):
            job["gap"] = 1
        if self.joined is not None:
            self.joined(steps, job)
        return job
