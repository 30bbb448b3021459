"""Buffered JSON-lines writer on the event fd (not stdout: recipes and torch print there)."""

from __future__ import annotations

import json
import math
import os
import time
from typing import Any

from tuimon import events

# Step phases whose JSON text is known (the fast path of emit_step).
_PHASE_JSON = {p: json.dumps(p) for p in events.PHASES}


def ph_us(ph: tuple) -> list:
    """A step's phases in ms -> the event's ``ph``: whole µs (rounded half up: times are never
    negative), None kept (a phase not seen; NaN or inf too)."""
    return [None if v is None or not math.isfinite(v) else int(v * 1000.0 + 0.5) for v in ph]


class Emitter:
    """Collects events and writes them in one ``os.write`` a few times a second.

    The training loop keeps its steps in its own preallocated ring and hands them over here
    only when it flushes (``flush_due``: one clock compare per step), through ``emit_step``,
    which writes each step's JSON line at once, without building the event's dict. A subclass
    that overrides ``emit`` or ``flush`` (the tests' spies, which keep events as dicts) gets step
    events through ``emit`` like every other event: the same fields, in the same order.
    """

    def __init__(self, fd: int | None, run: str, interval: float = 0.25) -> None:
        self.fd = fd
        self.run = run
        self.interval = interval
        self._buffer: list[dict | str] = []  # events, or step events already encoded
        self._last_flush = time.perf_counter()
        self._run_json = json.dumps(run)
        cls = type(self)
        self._lines = cls.emit is Emitter.emit and cls.flush is Emitter.flush

    def emit(self, type_: str, **fields) -> None:
        self._buffer.append(events.make(type_, self.run, **fields))

    def emit_now(self, type_: str, **fields) -> None:
        self.emit(type_, **fields)
        self.flush()

    def emit_step(self, i: int, t: float, ms: float, data_ms: float, n: int, loss: float | None,
                  phase: str, compile_ms: float = 0.0, profiled: int | None = None,
                  gap: int = 0, pre_ms: float | None = None, ph: tuple | None = None,
                  mem: int = 0) -> None:
        """A ``step`` event: the same as ``emit(events.STEP, i=i, t=t, ms=ms, data_ms=data_ms,
        n=n, loss=loss, phase=phase)`` plus ``compile_ms``, ``profiled``, ``gap``, a rank's
        ``pre_ms``, the step's phases ``ph`` (ms in, µs out: ``ph_us``) and ``mem`` when set, and the
        same line once encoded (tests/unit/test_hot_path.py holds the two paths to that)."""
        if self._lines and type(n) is int and type(i) is int and phase in _PHASE_JSON:
            finite = t + ms + data_ms + (0.0 if loss is None else loss) + compile_ms
            # Plain floats only (a float subclass's repr need not be JSON); NaN and inf go the
            # dict path, where a non-finite loss becomes null.
            if pre_ms is not None:
                finite += pre_ms
            if type(finite) is float and finite - finite == 0.0 and (
                    loss is None or type(loss) is float) and (not profiled or type(profiled) is int):
                line = (f'{{"type":"step","t":{t!r},"run":{self._run_json},"i":{i},"ms":{ms!r},'
                        f'"data_ms":{data_ms!r},"n":{n},"loss":{"null" if loss is None else repr(loss)},'
                        f'"phase":{_PHASE_JSON[phase]}')
                if compile_ms:
                    line += f',"compile_ms":{compile_ms!r}'
                if profiled:
                    line += f',"profiled":{profiled}'
                if gap:
                    line += ',"gap":1'
                if mem:
                    line += ',"mem":1'
                if pre_ms is not None:
                    line += f',"pre_ms":{pre_ms!r}'
                if ph is not None:
                    try:  # %d: int() of µs + 0.5, as ph_us rounds
                        d, f, b, o = ph  # a fifth part (eval, runner/phases.py): ValueError, below
                        line += ',"ph":[%d,%d,%d,%d]' % (  # noqa: UP031 - the fastest here
                            d * 1000.0 + 0.5, f * 1000.0 + 0.5, b * 1000.0 + 0.5, o * 1000.0 + 0.5)
                    except (TypeError, ValueError, OverflowError):  # a phase unseen (None), or NaN
                        line += ',"ph":' + json.dumps(ph_us(ph), separators=(",", ":"))
                self._buffer.append(line + "}\n")
                return
        step: dict[str, Any] = {"i": i, "t": t, "ms": ms, "data_ms": data_ms, "n": n, "loss": loss,
                                "phase": phase}
        if compile_ms:
            step["compile_ms"] = compile_ms
        if profiled:
            step["profiled"] = profiled
        if gap:
            step["gap"] = 1
        if mem:
            step["mem"] = 1
        if pre_ms is not None:
            step["pre_ms"] = pre_ms
        if ph is not None:
            step["ph"] = ph_us(ph)
        self.emit(events.STEP, **step)

    def flush_due(self) -> bool:
        return time.perf_counter() - self._last_flush >= self.interval

    def next_flush(self) -> float:
        """When (perf_counter) a flush is due next."""
        return self._last_flush + self.interval

    def flush(self) -> None:
        self._last_flush = time.perf_counter()
        if not self._buffer:
            return
        # Taken whole, then encoded: an event another thread adds meanwhile (a script's write
        # outside its directory, runner/script/files.py) waits for the next flush.
        buffer, self._buffer = self._buffer, []
        data = "".join([e if isinstance(e, str) else events.encode(e) for e in buffer]).encode()
        if self.fd is None:
            return
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(self.fd, view) :]
        except BrokenPipeError:
            # The parent is gone; keep training quietly is pointless, but crashing loses nothing.
            self.fd = None
