"""What torch says about CUDA graphs while a compiled variant runs: a ``logging.Handler`` on
torch's Inductor and Dynamo loggers, turning its warnings into ``cudagraphs`` events.

With ``mode="reduce-overhead"`` Inductor wraps each graph in a CUDA graph unless it cannot, and
then says why on its ``cudagraphs`` log ("skipping cudagraphs due to mutated inputs ...": at
compile time, or on a later call for a mutation or a re-record limit), or warns that dynamic
shapes make it record a new CUDA graph for each distinct input size. Those lines are the whole
reason a reduce-overhead variant runs no faster than default, and nothing else records them.
The handler only sees warnings (torch formats none unless it emits them), so steps pay nothing.
"""

from __future__ import annotations

import contextlib
import logging

from tuimon import events

LOGGERS = ("torch._inductor", "torch._dynamo")
MAX_EVENTS = 20  # a run that re-records for every input size says so often: the first ones tell


def classify(message: str) -> str | None:
    """``skipped``, ``rerecorded`` (a new CUDA graph per input size, or too many re-records),
    or None for a warning that is not about CUDA graphs."""
    low = message.lower()
    if "re-record" in low or ("cudagraph" in low and "distinct" in low and "size" in low):
        return "rerecorded"
    if "skipping cudagraph" in low:
        return "skipped"
    return None


class HintListener(logging.Handler):
    def __init__(self, emitter) -> None:
        super().__init__(level=logging.WARNING)
        self.emitter = emitter
        self.said = 0

    def install(self) -> None:
        for name in LOGGERS:
            logging.getLogger(name).addHandler(self)

    def remove(self) -> None:
        for name in LOGGERS:
            logging.getLogger(name).removeHandler(self)

    def emit(self, record: logging.LogRecord) -> None:  # never let a parse error hurt training
        with contextlib.suppress(Exception):
            self._handle(record)

    def _handle(self, record: logging.LogRecord) -> None:
        if self.said >= MAX_EVENTS:
            return
        message = record.getMessage()
        kind = classify(message)
        if kind is None:
            return
        self.said += 1
        text = " ".join(line.strip() for line in message.strip().splitlines()[:4])
        self.emitter.emit_now(events.CUDAGRAPHS, kind=kind, text=text[:600])
