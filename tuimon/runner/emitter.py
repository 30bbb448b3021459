"""Buffered JSON-lines writer on the event fd (not stdout: recipes and torch print there)."""

from __future__ import annotations

import os
import time

from tuimon import events


class Emitter:
    """Collects events and writes them in one ``os.write`` a few times a second.

    Buffering keeps the per-step cost to appending a dict; ``flush_due`` lets the loop decide
    when to pay for encoding, at a step boundary.
    """

    def __init__(self, fd: int | None, run: str, interval: float = 0.25) -> None:
        self.fd = fd
        self.run = run
        self.interval = interval
        self._buffer: list[dict] = []
        self._last_flush = time.perf_counter()

    def emit(self, type_: str, **fields) -> None:
        self._buffer.append(events.make(type_, self.run, **fields))

    def emit_now(self, type_: str, **fields) -> None:
        self.emit(type_, **fields)
        self.flush()

    def flush_due(self) -> bool:
        return time.perf_counter() - self._last_flush >= self.interval

    def flush(self) -> None:
        self._last_flush = time.perf_counter()
        if not self._buffer:
            return
        data = "".join(events.encode(e) for e in self._buffer).encode()
        self._buffer.clear()
        if self.fd is None:
            return
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(self.fd, view) :]
        except BrokenPipeError:
            # The parent is gone; keep training quietly is pointless, but crashing loses nothing.
            self.fd = None
