"""The parent's control lines on ``--control-fd``: ``pause``, ``resume``, ``stop``, and
``profile`` (optionally followed by JSON options, e.g. ``profile {"active": 3}``: see
runner/profiling/).

The training loop asks ``poll()`` at a step boundary, outside the timed region: at the first
boundary 50 ms after its last read (runner/engine.py POLL_S), and at the next one again after a
line (several may have come at once). The fd is non-blocking, so when nothing was sent (almost
always) a poll is one failed ``os.read``: a few microseconds (tests/e2e/test_control.py measures it),
more right after a step, hence the 50 ms. ``wait()`` blocks, for a paused run.

End of file means the parent is gone (it holds the only write end): that reads as ``"eof"``,
which the loop treats like ``stop`` so an orphaned runner does not train on for nobody.

A rank of a torchrun job reads its lines from its own socket (runner/link.py; ``sock``)
and gets two more: ``pause-at S [turn]`` and ``stop-at S REASON``. Every rank of a job gets the
same line, and each acts at the boundary where it has done ``S`` steps (at once when it is past
``S``), so the ranks pause and stop at the same step and none is left waiting inside a
collective for a rank that stopped before it. The loop compares its step count with ``at``
(infinite when nothing is due) once a step, and takes the command with ``due``.
"""

from __future__ import annotations

import contextlib
import math
import os
import select
import socket
from collections import deque

EOF = "eof"
SCHEDULED = ("pause-at", "stop-at")


class ControlLines:
    def __init__(self, fd: int | None, sock: socket.socket | None = None) -> None:
        """``sock``: a rank's channel (its events go the other way on the same socket, so it
        stays blocking and is read with MSG_DONTWAIT)."""
        self.sock = sock
        self.fd = sock.fileno() if sock is not None else fd
        self.ranked = sock is not None  # a rank of a job: its paused events say at which step
        self.paused_s = 0.0  # total time spent paused, kept out of --duration
        self.at = math.inf  # the step of the next scheduled command (pause-at / stop-at)
        self.stop_reason: str | None = None  # why a stop-at stopped the run (stopped, duration)
        self._pause_at, self._pause_turn, self._stop_at = math.inf, False, math.inf
        self._rest = b""
        self._lines: deque[str] = deque()
        if fd is not None and sock is None:
            os.set_blocking(fd, False)

    def poll(self) -> str | None:
        """The next command sent so far, ``"eof"`` once the parent is gone, else None. Never blocks."""
        if self._lines:
            return self._lines.popleft()
        if self.fd is None:
            return None
        try:
            data = self.sock.recv(4096, socket.MSG_DONTWAIT) if self.sock else os.read(self.fd, 4096)
        except BlockingIOError:
            return None
        except OSError:  # a reset connection: the supervisor is gone
            data = b""
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

    def schedule(self, command: str) -> bool:
        """Keep ``pause-at S [turn]`` / ``stop-at S REASON`` for step S; False for other lines."""
        word, _, rest = command.partition(" ")
        if word not in SCHEDULED:
            return False
        parts = rest.split()
        if not parts or not parts[0].isdigit():
            return True  # malformed: ignored, like any line this runner does not know
        step = int(parts[0])
        if word == "stop-at":
            self._stop_at = step
            self.stop_reason = parts[1] if len(parts) > 1 else "stopped"
        else:
            self._pause_at, self._pause_turn = step, "turn" in parts[1:]
        self.at = min(self._pause_at, self._stop_at)
        return True

    def cancel_pause(self) -> None:
        """A resume before a scheduled pause landed: it will not."""
        self._pause_at = math.inf
        self.at = self._stop_at

    def due(self, i: int) -> str | None:
        """The scheduled command due once ``i`` steps are done: "stop", "pause" or "pause turn"."""
        if i >= self._stop_at:
            self._stop_at = self.at = math.inf
            return "stop"
        if i >= self._pause_at:
            command = "pause turn" if self._pause_turn else "pause"
            self._pause_at = math.inf
            self.at = self._stop_at
            return command
        return None

    def _take(self, data: bytes) -> None:
        if not data:
            self._lines.append(EOF)
            if self.sock is None and self.fd is not None:
                with contextlib.suppress(OSError):
                    os.close(self.fd)
            self.fd = None
            return
        *lines, self._rest = (self._rest + data).split(b"\n")
        self._lines.extend(text for text in (x.decode("ascii", "replace").strip() for x in lines) if text)
