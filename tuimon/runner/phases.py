"""Where a step goes: data, forward, backward, optimizer, eval, and the rest ("other").

A recipe's loop knows its step's parts and takes the clock between them itself (runner/recipe_loop.py,
``Trainer.phased_step``). A script's steps are seen from hooks (runner/script/): each hook says
where a part begins (``enter``) and ends (``leave``), and the ``Timeline`` gives every stretch of
the step to the part open then, the innermost one when parts nest (an optimizer's closure that
runs forward and backward inside ``step()``: those count as forward and backward, the rest of
the step call as optimizer), so the parts never overlap and sum to the step.

On the CPU a part is a span, two clock reads apart (see ``Timeline``); on CUDA ``enter`` and ``leave``
record an event on the step clock instead (``CudaClock.mark``), read once the GPU has passed it,
like the step time (runner/timing.py): no sync. A part the step could not see (no DataLoader, no
module holding the optimizer's parameters, no optimizer) is None, never a guess: its time is in
"other". Eval (the trained module's calls with gradients off: a script's eval forwards inside its
step, runner/script/phases.py) is a part only where it ran: a step without any ends with four
parts, read as 0.
"""

from __future__ import annotations

import time

from tuimon.events import STEP_PHASES

DATA, FORWARD, BACKWARD, OPTIMIZER, EVAL = range(len(STEP_PHASES))
OTHER = len(STEP_PHASES)


class Timeline:
    """The parts of the step under way, from a script's hooks. ``mark``: the CUDA clock's
    ``mark`` on a GPU (set when the run starts), None on the CPU."""

    __slots__ = ("acc", "cur", "t", "stack", "mark", "seen", "all_seen", "guard", "perf", "inner")

    def __init__(self) -> None:
        self.perf = time.perf_counter  # the clock, as it is when the run starts (a test's fake)
        self.acc = [0.0] * (OTHER + 1)  # seconds in each part so far this step (CPU)
        self.cur = OTHER  # the part open now
        self.t = self.perf()  # when the stretch under way began (CPU)
        self.stack: list[int] = []  # the parts the open one is nested in
        self.mark = None
        self.seen = [False] * OTHER  # parts this run has seen at all (eval's is not asked)
        self.all_seen = False
        self.guard = None  # a SyncGuard on CUDA: event records count as tuimon's work
        self.inner = 0.0  # seconds of the parts closed so far, ever (CPU: the hooks' spans)

    # CPU: a part is a span, kept by its hook with no call into the Timeline (a call a part cost
    # ~1.3 µs a step in all: bench/RESULTS.md). As the part begins the hook reads
    # ``t0, i0 = perf_counter(), timeline.inner``; as it ends it adds the span to its part, less
    # the parts closed inside it (an optimizer's closure running forward and backward), so the
    # parts never overlap and "other" is the step less them:
    #     spent = perf_counter() - t0
    #     timeline.acc[part] += spent - (timeline.inner - i0)
    #     timeline.inner = i0 + spent
    # (runner/script/hooks.py, runner/script/phases.py; tests/scripts/closure_step.py tests it.)

    # CUDA (and any caller without spans): two calls a part, ``enter`` and ``leave``; on CUDA each
    # records an event on the step clock. Both hand back the clock they read (None on CUDA).
    def enter(self, part: int) -> float | None:
        cur = self.cur
        self.stack.append(cur)
        self.cur = part
        if self.mark is None:
            now = self.perf()
            self.acc[cur] += now - self.t
            self.t = now
            return now
        self._mark(cur)
        self.seen[part] = True  # on the CPU, end() sees it from the sums
        return None

    def leave(self) -> float | None:
        cur = self.cur
        stack = self.stack
        self.cur = stack.pop() if stack else OTHER
        if self.mark is None:
            now = self.perf()
            self.acc[cur] += now - self.t
            self.t = now
            return now
        self._mark(cur)
        return None

    def _mark(self, part: int) -> None:
        guard = self.guard
        if guard is not None:
            guard.ours()
            self.mark(part)
            guard.theirs()
        else:
            self.mark(part)

    def end(self) -> tuple:
        """The step ends now (CPU): its parts in ms, None for a part this run never saw, eval only
        when the step ran some; the next step's parts start from zero (its spans need nothing
        more: ``begin`` is CUDA's)."""
        acc = self.acc
        self.acc = [0.0] * (OTHER + 1)
        if self.all_seen:
            if acc[4]:  # EVAL
                return acc[0] * 1000.0, acc[1] * 1000.0, acc[2] * 1000.0, acc[3] * 1000.0, acc[4] * 1000.0
            return acc[0] * 1000.0, acc[1] * 1000.0, acc[2] * 1000.0, acc[3] * 1000.0
        seen = self.seen
        out = []
        for k in range(EVAL):
            if acc[k]:
                seen[k] = True
            out.append(acc[k] * 1000.0 if seen[k] else None)
        self.all_seen = all(seen[:EVAL])
        if acc[EVAL]:
            out.append(acc[EVAL] * 1000.0)
        return tuple(out)

    def unseen(self) -> tuple:
        """The step ends now (CUDA): the parts this run never saw (the clock nulls them; eval is
        left out by the clock where the step marked none)."""
        return tuple(k for k in range(EVAL) if not self.seen[k])

    def begin(self) -> None:
        """The next step starts now (its clock started just before); a part left open (a hook
        that never heard its end: an exception inside it) is closed."""
        self.acc = [0.0] * (OTHER + 1)
        if self.stack:
            self.stack.clear()
        self.cur = OTHER
        self.t = self.perf()
