"""The session's rank socket: every rank of every torchrun job connects here, each on its own
connection, so ranks never share a stream (two ranks writing one pipe or stdout interleave, and
two JSON objects on one line were seen).

A Unix socket in a private directory (``mkdtemp``: 0700, a short path under the system's temp
directory, whatever the session's path). A rank's first line is its ``hello`` (runner/
link.py): the run's token (each run gets its own, handed to its ranks in their settings),
its rank, pid and host. A connection whose peer is another user, or whose hello names no token
of this session, is closed. After the hello the rank's events come as JSON lines and its control
lines go back on the same connection (``RankConn.send``, never blocking the supervisor).

One thread serves every connection (a selector): it only decodes lines and hands batches over
to the supervisor's inbox; the supervisor's loop thread does everything else.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import selectors
import shutil
import socket
import tempfile
import threading
from collections.abc import Callable

from tuimon import events
from tuimon.control.channel import peer_uid

MAX_HELLO = 1 << 14

# Called on the hub's thread: ("hello", run, rank, hello dict, RankConn), ("events", run, rank,
# batch), ("eof", run, rank).
Deliver = Callable[..., None]


class RankConn:
    """One rank's connection, as the supervisor uses it."""

    def __init__(self, sock: socket.socket, run: str, rank: int, hello: dict) -> None:
        self.sock, self.run, self.rank, self.hello = sock, run, rank, hello
        self.pid: int | None = hello.get("pid")

    def send(self, line: str) -> bool:
        """One control line; False when the rank is gone or not reading (its buffer full)."""
        try:
            data = (line + "\n").encode()
            return self.sock.send(data, socket.MSG_DONTWAIT) == len(data)
        except OSError:
            return False


class _Peer:
    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.rest = b""
        self.conn: RankConn | None = None  # set once its hello was accepted


class RankHub:
    def __init__(self, deliver: Deliver) -> None:
        self.deliver = deliver
        self.dir = tempfile.mkdtemp(prefix="tuimon-ranks-")
        self.path = os.path.join(self.dir, "ranks.sock")
        self._tokens: dict[str, str] = {}  # token -> run
        self._uid = os.getuid()
        self._sel = selectors.DefaultSelector()
        self._server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._server.bind(self.path)
        os.chmod(self.path, 0o600)
        self._server.listen(256)
        self._server.setblocking(False)
        self._sel.register(self._server, selectors.EVENT_READ, None)
        self._wake_r, self._wake_w = socket.socketpair()
        self._sel.register(self._wake_r, selectors.EVENT_READ, "wake")
        self._closed = False
        self._thread = threading.Thread(target=self._serve, name="tuimon-rank-hub", daemon=True)
        self._thread.start()

    def token(self, run: str) -> str:
        """A new run's secret: its ranks say it in their hello."""
        token = secrets.token_hex(16)
        self._tokens[token] = run
        return token

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        with contextlib.suppress(OSError):
            self._wake_w.send(b"x")
        self._thread.join(timeout=5)
        shutil.rmtree(self.dir, ignore_errors=True)

    # ---- the hub's thread ---------------------------------------------------------------------
    def _serve(self) -> None:
        try:
            while not self._closed:
                for key, _ in self._sel.select(timeout=1.0):
                    if key.data == "wake":
                        return
                    if key.data is None:
                        self._accept()
                    else:
                        self._read(key.data)
        finally:
            for key in list(self._sel.get_map().values()):
                with contextlib.suppress(OSError):
                    key.fileobj.close()
            self._sel.close()
            self._wake_w.close()

    def _accept(self) -> None:
        try:
            sock, _ = self._server.accept()
        except OSError:
            return
        try:
            if peer_uid(sock) != self._uid:
                sock.close()
                return
        except OSError:
            sock.close()
            return
        sock.setblocking(True)  # sends use MSG_DONTWAIT; reads only when the selector says so
        self._sel.register(sock, selectors.EVENT_READ, _Peer(sock))

    def _read(self, peer: _Peer) -> None:
        try:
            data = peer.sock.recv(1 << 16)
        except OSError:
            data = b""
        if not data:
            self._drop(peer)
            return
        lines = (peer.rest + data).split(b"\n")
        peer.rest = lines.pop()
        if peer.conn is None:
            if not lines:
                if len(peer.rest) > MAX_HELLO:
                    self._drop(peer)
                return
            if not self._hello(peer, lines.pop(0)):
                return
        batch = [e for e in (events.decode(x.decode("utf-8", "replace")) for x in lines) if e]
        if batch:
            self.deliver("events", peer.conn.run, peer.conn.rank, batch)

    def _hello(self, peer: _Peer, line: bytes) -> bool:
        try:
            hello = json.loads(line)
            run = self._tokens.get(hello.get("token"))
            rank = int(hello["rank"])
        except (ValueError, TypeError, KeyError, AttributeError):
            run = None
        if run is None or hello.get("run") != run:
            self._drop(peer, said=False)
            return False
        hello.pop("token", None)
        peer.conn = RankConn(peer.sock, run, rank, hello)
        self.deliver("hello", run, rank, hello, peer.conn)
        return True

    def _drop(self, peer: _Peer, said: bool = True) -> None:
        with contextlib.suppress(KeyError, ValueError):
            self._sel.unregister(peer.sock)
        with contextlib.suppress(OSError):
            peer.sock.close()
        if said and peer.conn is not None:
            self.deliver("eof", peer.conn.run, peer.conn.rank)
