"""``TUIMON_SYNC_DEBUG=warn|error`` (hidden; for tests and bench): prove tuimon adds no
host-device sync per step on CUDA.

torch.cuda.set_sync_debug_mode makes a synchronizing call warn or raise. It flags what goes
through c10's sync helpers: stream and device synchronize (``torch.cuda.synchronize``), and
blocking copies between device and host (``.item()``, ``.cpu()``, ``.tolist()``, ``if
cuda_tensor:``, ``nonzero``, masked indexing, ...). It does not flag ``Event.record``,
``query``, ``elapsed_time`` or ``Event.synchronize`` (cudaEventSynchronize skips the check), nor
a ``non_blocking=True`` copy from pageable host memory, which the driver may stage
synchronously. The mode is process-global, so the loop switches it: ``ours()`` before tuimon's
own per-step work (step clock, loss copy, reading finished steps, events, control), back to the
mode it found with ``theirs()`` around the recipe's step, where a recipe may sync as it likes
(and where torch.compile compiles). A guard without a level does nothing.
"""

from __future__ import annotations

import os

from tuimon.envvars import SYNC_DEBUG as ENV

LEVELS = {"warn": 1, "error": 2}


class SyncGuard:
    """``cuda`` is ``torch.cuda`` (or a fake with get/set_sync_debug_mode); None: off."""

    def __init__(self, cuda, level: str | None) -> None:
        if level is not None and level not in LEVELS:
            raise ValueError(f"{ENV} must be one of {', '.join(LEVELS)}, got {level!r}")
        self.on = cuda is not None and level is not None
        self.level = level
        self._cuda = cuda
        self._mode = LEVELS.get(level or "", 0)
        self._found = cuda.get_sync_debug_mode() if self.on else 0

    @classmethod
    def from_env(cls, cuda, environ=os.environ) -> SyncGuard:
        return cls(cuda, environ.get(ENV) or None)

    def ours(self) -> None:
        if self.on:
            self._cuda.set_sync_debug_mode(self._mode)

    def theirs(self) -> None:
        if self.on:
            self._cuda.set_sync_debug_mode(self._found)

    restore = theirs  # the loop is over: the process's mode as it was
