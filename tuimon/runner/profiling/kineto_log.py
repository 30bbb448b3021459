"""torch.profiler's own lines kept out of the run's log.

Kineto, torch.profiler's C++ side, logs straight to fd 2 -- the script's stderr, which is the
run's ``logs/RUN.log`` -- as it starts and stops: ``USDT:... profiler_start`` /
``profiler_stop`` markers (shown at every log level below 6, ``KINETO_LOG_LEVEL``, which also
hides its errors and is read once, when kineto first starts), and on a machine without a GPU
``ERROR:... gpuGetDeviceCount failed with code 35``. A capture tuimon opens (the automatic one
too, which nobody asked for) must not write into the script's log. So around the profiler's
start, step and stop, fd 2 points at a temporary file; afterwards kineto's lines are dropped
(its warnings and errors become the capture's notes) and whatever else was written meanwhile
(another thread of the script) goes on to the log as it was.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import tempfile

# "USDT:2026-11-24 10:49:33 13114:13114 SyncActivityProfilerHandler.cpp:39] profiler_start"
KINETO = re.compile(rb"(VERBOSE|INFO|WARNING|STAGE|USDT|ERROR):\d{4}-\d\d-\d\d \d\d:\d\d:\d\d "
                    rb"\d+:\d+ [\w.]+:\d+\] ?(.*)")
NO_GPU = b"gpuGetDeviceCount failed"  # kineto looked for a GPU on a machine that has none


class KinetoLog:
    """``with log:`` around a call that may start or stop the profiler. ``notes``: the
    capture's notes, where kineto's warnings and errors go; ``gpu``: a GPU is profiled (its
    absence is then worth a note)."""

    def __init__(self, notes: list[str], gpu: bool = False) -> None:
        self.notes = notes
        self.gpu = gpu
        self._saved: int | None = None
        self._tmp = None

    def __enter__(self) -> KinetoLog:
        with contextlib.suppress(Exception):
            sys.stderr.flush()  # the script's own lines first, where they belong
        try:
            tmp = tempfile.TemporaryFile()
            saved = os.dup(2)
        except OSError:  # no fd 2, no temporary file: the lines go where they would have
            return self
        os.dup2(tmp.fileno(), 2)
        self._saved, self._tmp = saved, tmp
        return self

    def __exit__(self, *exc) -> None:
        if self._saved is None:
            return
        with contextlib.suppress(Exception):
            sys.stderr.flush()
        saved, tmp, self._saved, self._tmp = self._saved, self._tmp, None, None
        os.dup2(saved, 2)
        os.close(saved)
        tmp.seek(0)
        data = tmp.read()
        tmp.close()
        rest = self.keep(data)
        if rest:
            with contextlib.suppress(OSError):
                os.write(2, rest)

    def keep(self, data: bytes) -> bytes:
        """What goes on to the log: every line but kineto's (its warnings and errors noted)."""
        rest = []
        for line in data.splitlines(keepends=True):
            m = KINETO.match(line)
            if m is None:
                rest.append(line)
            elif m.group(1) in (b"WARNING", b"ERROR") and (self.gpu or NO_GPU not in line):
                note = "torch.profiler: " + m.group(2).decode("utf-8", "replace").strip()
                if note not in self.notes:
                    self.notes.append(note)
        return b"".join(rest)
