"""The parent's control lines on ``--control-fd``: ``pause``, ``resume``, ``stop``, and
``profile`` (optionally followed by JSON options, e.g. ``profile {"active": 3}``: see
runner/profiling/).

The training loop asks ``poll()`` at a step boundary, outside the timed region: at the first
boundary 50 ms after its last read (runner/loop.py POLL_S), and at the next one again after a
line (several may have come at once). The fd is non-blocking, so when nothing was sent (almost
always) a poll is one failed ``os.read``: a few microseconds (tests/test_control.py measures it),
more right after a step, hence the 50 ms. ``wait()`` blocks, for a paused run.

End of file means the parent is gone (it holds the only write end): that reads as ``"eof"``,
which the loop treats like ``stop`` so an orphaned runner does not train on for nobody.
"""

from __future__ import annotations

import contextlib
import os
import select
from collections import deque

EOF = "eof"


class Control:
    def __init__(self, fd: int | None) -> None:
        self.fd = fd
        self.paused_s = 0.0  # total time spent paused, kept out of --duration
        self._rest = b""
        self._lines: deque[str] = deque()
        if fd is not None:
            os.set_blocking(fd, False)

    def poll(self) -> str | None:
        """The next command sent so far, ``"eof"`` once the parent is gone, else None. Never blocks."""
        if self._lines:
            return self._lines.popleft()
        if self.fd is None:
            return None
        try:
            data = os.read(self.fd, 4096)
        except BlockingIOError:
            return None
        self._take(data)
        return self._lines.popleft() if self._lines else None

    def wait(self) -> str:
        """Block until the next command (or ``"eof"``)."""
        while True:
            command = self.poll()
            if command is not None:
                return command
            if self.fd is None:  # no channel: nobody can ever resume us
                return EOF
            select.select([self.fd], [], [])

    def _take(self, data: bytes) -> None:
        if not data:
            self._lines.append(EOF)
            with contextlib.suppress(OSError):
                os.close(self.fd)
            self.fd = None
            return
        *lines, self._rest = (self._rest + data).split(b"\n")
        self._lines.extend(text for text in (x.decode("ascii", "replace").strip() for x in lines) if text)
