"""Step clocks: host monotonic time on CPU, CUDA events read lazily on a GPU.

Both clocks take ``start()`` / ``stop()`` around each step and hand back finished step times
in order from ``ready()``. The CUDA clock never synchronises per step: it records two events
and only asks ``query()`` whether they are done, so the training loop stays asynchronous. Its
events are recorded again once read (a pool, not two new events a step).

The CUDA clock also splits a step into its phases (data, forward, backward, optimizer, eval,
other): ``mark(phase)`` records one more event where a part of the step ends, and once the
step's end is done the time between consecutive marks goes to the phase each mark closes, the
last stretch to "other". The split lands in ``ph_col`` (the step ring's column, ``StepRing.ph``) at the
step's slot, in ms, so the phases sum to the step time exactly. On the CPU the loop and the
script hooks take the clock themselves (runner/phases.py).
"""

from __future__ import annotations

import time
from collections import deque

from tuimon.events import STEP_PHASES

_EVAL, _OTHER = STEP_PHASES.index("eval"), len(STEP_PHASES)  # runner/phases.py's EVAL and OTHER


class CpuClock:
    def __init__(self) -> None:
        self._t0 = 0.0
        self._done: list[float] = []

    def start(self) -> None:
        self._t0 = time.perf_counter()

    def stop(self) -> None:
        self._done.append((time.perf_counter() - self._t0) * 1000.0)

    def ready(self) -> list[float]:
        out, self._done = self._done, []
        return out

    def drain(self) -> list[float]:
        return self.ready()


class CudaClock:
    """``cuda`` is ``torch.cuda`` (or a fake with ``Event`` and ``synchronize`` for tests)."""

    def __init__(self, cuda, max_pending: int = 1024, ph_col: list | None = None,
                 mask: int = 0) -> None:
        self._cuda = cuda
        self._pairs: deque = deque()
        self._done: list[float] = []
        self._free: list = []  # events already read, to be recorded again
        self._start = None
        self.max_pending = max_pending
        # The phases: marks of the step under way, where its splits go, and the next step's slot.
        self._marks: list = []
        self.ph_col, self.mask = ph_col, mask
        self._n = 0

    def _event(self):
        return self._free.pop() if self._free else self._cuda.Event(enable_timing=True)

    def start(self) -> None:
        self._start = self._event()
        self._start.record()
        if self._marks:
            self._marks = []

    def mark(self, phase: int | None = None):
        """A part of the step ends here: ``phase`` (an index into events.STEP_PHASES, 5: other),
        or with None the next one in order (data, forward, backward, optimizer)."""
        e = self._event()
        e.record()
        self._marks.append((e, len(self._marks) if phase is None else phase))
        return e

    def stop(self, unseen: tuple = ()) -> None:
        """``unseen``: the phases this step could not see (None in its split)."""
        end = self._event()
        end.record()
        self._pairs.append((self._start, end, self._marks or None, unseen))
        self._marks = []
        if len(self._pairs) > self.max_pending:
            # The GPU is far behind; waiting on the oldest bounds memory without a full sync.
            self._pairs[0][1].synchronize()
            self._collect()

    def _collect(self) -> None:
        while self._pairs and self._pairs[0][1].query():
            start, end, marks, unseen = self._pairs.popleft()
            self._done.append(start.elapsed_time(end))
            self._free += (start, end)
            if self.ph_col is not None:
                self.ph_col[self._n & self.mask] = None if marks is None else self._split(
                    start, end, marks, unseen)
            self._n += 1

    def _split(self, start, end, marks: list, unseen: tuple) -> tuple:
        """The step's phases in ms: the stretch up to each mark goes to its phase (the last
        stretch to other, left out); eval only in a step that marked some (runner/phases.py)."""
        acc = [0.0] * (_OTHER + 1)
        prev = start
        evals = False
        for e, phase in marks:
            acc[phase] += prev.elapsed_time(e)
            evals = evals or phase == _EVAL
            prev = e
            self._free.append(e)
        for phase in unseen:
            acc[phase] = None
        return tuple(acc[:_OTHER]) if evals else tuple(acc[:_EVAL])

    def ready(self) -> list[float]:
        self._collect()
        out, self._done = self._done, []
        return out

    def drain(self) -> list[float]:
        """End of run: wait for the last step, then everything is ready."""
        if self._pairs:
            self._pairs[-1][1].synchronize()
        return self.ready()
