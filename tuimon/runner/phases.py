"""Where a step goes: data, forward, backward, optimizer, and the rest ("other").

A recipe's loop knows its step's parts and takes the clock between them itself (runner/loop.py,
``Trainer.phased_step``). A script's steps are seen from hooks (runner/script/): each hook says
where a part begins (``enter``) and ends (``leave``), and the ``Timeline`` gives every stretch of
the step to the part open then, the innermost one when parts nest (an optimizer's closure that
runs forward and backward inside ``step()``: those count as forward and backward, the rest of
the step call as optimizer), so the parts never overlap and sum to the step.

On the CPU a stretch is two clock reads apart; on CUDA ``enter`` and ``leave`` record an event on
the step clock instead (``CudaClock.mark``), read once the GPU has passed it, like the step time
(runner/timing.py): no sync. A part the step could not see (no DataLoader, no module holding the
optimizer's parameters, no optimizer) is None, never a guess: its time is in "other".
"""

from __future__ import annotations

import time

from tuimon.events import STEP_PHASES

DATA, FORWARD, BACKWARD, OPTIMIZER = range(len(STEP_PHASES))
OTHER = len(STEP_PHASES)


class Timeline:
    """The parts of the step under way, from a script's hooks. ``mark``: the CUDA clock's
    ``mark`` on a GPU (set when the run starts), None on the CPU."""

    __slots__ = ("acc", "cur", "t", "stack", "mark", "seen", "all_seen", "guard", "perf")

    def __init__(self) -> None:
        self.perf = time.perf_counter  # the clock, as it is when the run starts (a test's fake)
        self.acc = [0.0] * (OTHER + 1)  # seconds in each part so far this step (CPU)
        self.cur = OTHER  # the part open now
        self.t = self.perf()  # when the stretch under way began (CPU)
        self.stack: list[int] = []  # the parts the open one is nested in
        self.mark = None
        self.seen = [False] * OTHER  # parts this run has seen at all
        self.all_seen = False
        self.guard = None  # a SyncGuard on CUDA: event records count as tuimon's work

    # Two hooks a part, a few a step: kept to a clock read and a few slot loads each (CPU).
    def enter(self, part: int) -> None:
        cur = self.cur
        if self.mark is None:
            now = self.perf()
            self.acc[cur] += now - self.t
            self.t = now
        else:
            self._mark(cur)
            self.seen[part] = True  # on the CPU, end() sees it from the sums
        self.stack.append(cur)
        self.cur = part

    def leave(self) -> None:
        if self.mark is None:
            now = self.perf()
            self.acc[self.cur] += now - self.t
            self.t = now
        else:
            self._mark(self.cur)
        stack = self.stack
        self.cur = stack.pop() if stack else OTHER

    def _mark(self, part: int) -> None:
        guard = self.guard
        if guard is not None:
            guard.ours()
            self.mark(part)
            guard.theirs()
        else:
            self.mark(part)

    def end(self) -> tuple:
        """The step ends now (CPU): its parts in ms, None for a part this run never saw."""
        now = self.perf()
        acc = self.acc
        acc[self.cur] += now - self.t
        if self.all_seen:
            return acc[0] * 1000.0, acc[1] * 1000.0, acc[2] * 1000.0, acc[3] * 1000.0
        seen = self.seen
        out = []
        for k in range(OTHER):
            if acc[k]:
                seen[k] = True
            out.append(acc[k] * 1000.0 if seen[k] else None)
        self.all_seen = all(seen)
        return tuple(out)

    def unseen(self) -> tuple:
        """The step ends now (CUDA): the parts this run never saw (the clock nulls them)."""
        return tuple(k for k in range(OTHER) if not self.seen[k])

    def begin(self) -> None:
        """The next step starts now (its clock started just before); a part left open (a hook
        that never heard its end: an exception inside it) is closed."""
        self.acc = [0.0] * (OTHER + 1)
        if self.stack:
            self.stack.clear()
        self.cur = OTHER
        self.t = self.perf()
