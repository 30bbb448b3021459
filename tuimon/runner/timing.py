"""Step clocks: host monotonic time on CPU, CUDA events read lazily on a GPU.

Both clocks take ``start()`` / ``stop()`` around each step and hand back finished step times
in order from ``ready()``. The CUDA clock never synchronises per step: it records two events
and only asks ``query()`` whether they are done, so the training loop stays asynchronous. Its
events are recorded again once read (a pool, not two new events a step).
"""

from __future__ import annotations

import time
from collections import deque


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

    def __init__(self, cuda, max_pending: int = 1024) -> None:
        self._cuda = cuda
        self._pairs: deque = deque()
        self._done: list[float] = []
        self._free: list = []  # events already read, to be recorded again
        self._start = None
        self.max_pending = max_pending

    def _event(self):
        return self._free.pop() if self._free else self._cuda.Event(enable_timing=True)

    def start(self) -> None:
        self._start = self._event()
        self._start.record()

    def stop(self) -> None:
        end = self._event()
        end.record()
        self._pairs.append((self._start, end))
        if len(self._pairs) > self.max_pending:
            # The GPU is far behind; waiting on the oldest bounds memory without a full sync.
            self._pairs[0][1].synchronize()
            self._collect()

    def _collect(self) -> None:
        while self._pairs and self._pairs[0][1].query():
            start, end = self._pairs.popleft()
            self._done.append(start.elapsed_time(end))
            self._free += (start, end)

    def ready(self) -> list[float]:
        self._collect()
        out, self._done = self._done, []
        return out

    def drain(self) -> list[float]:
        """End of run: wait for the last step, then everything is ready."""
        if self._pairs:
            self._pairs[-1][1].synchronize()
        return self.ready()
