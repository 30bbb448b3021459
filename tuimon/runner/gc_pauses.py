"""Python's garbage collector in the steps: how often it ran and how long it paused them, a
component of the step engine (runner/engine.py), the worked example of docs/development.md's
"Adding a per-step measurement". ``gc.callbacks`` tells each collection's start and end, on the
thread that triggered it (a collection anywhere in the process pauses the steps alike); the
totals go out as a ``gc`` event at steps 16, 32, 64, 128, 256, then every ``EVERY`` steps and at
the end, with the steps they cover, outside every step's clock: short windows first, so that a
short run has windows past its warm-up (a compile's many collections stay in the warm-up's
windows, never charged to the steady steps). A step pays nothing unless a collection runs in
it (two clock reads then)."""

from __future__ import annotations

import gc
import time

from tuimon import events
from tuimon.runner.memory_phases import NEVER

EVERY = 256  # steps a gc event covers, at most
FIRST = 16  # ... the first one; each next one twice as many, up to EVERY


class GcPauses:
    def __init__(self) -> None:
        self.due = NEVER
        self.collections = self.oldest = 0  # since the last event; oldest: generation-2 ones
        self.seconds = 0.0
        self._t0 = 0.0
        self._from = 0  # the first step the next event covers

    def _callback(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._t0 = time.perf_counter()
            return
        self.seconds += time.perf_counter() - self._t0
        self.collections += 1
        self.oldest += info.get("generation") == 2

    def start(self, engine) -> None:
        gc.callbacks.append(self._callback)
        self._from, self.due = engine.i, engine.i + FIRST

    def boundary(self, engine, i: int) -> None:
        self._said(engine, i)
        self.due = i + min(max(i, FIRST), EVERY)

    def end(self, engine) -> None:
        if self._callback in gc.callbacks:
            gc.callbacks.remove(self._callback)
        self._said(engine, engine.i)

    def _said(self, engine, i: int) -> None:
        if i > self._from:
            engine.emitter.emit(events.GC, steps=[self._from, i], collections=self.collections,
                                oldest=self.oldest, seconds=round(self.seconds, 6))
        self._from, self.collections, self.oldest, self.seconds = i, 0, 0, 0.0
