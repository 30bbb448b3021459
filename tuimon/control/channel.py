"""The control socket of a detached session: JSON lines over a Unix socket in the session dir.

The daemon (control/daemon.py) serves it; the TUI (ui/sources.py RemoteSource), ``tuimon attach``
and tests are its clients. No torch, no textual.

Protocol: one JSON object per line, UTF-8, request then reply, in order, on one connection::

    request  {"cmd": NAME, "args": [...], "kwargs": {...}}      (args / kwargs optional)
    reply    {"ok": true, "result": ...}  or  {"ok": false, "error": "one line"}

NAME is either a daemon-level command:

- ``attach``: this connection is a viewer. The session stays open while at least one viewer is
  connected (see the daemon's docstring); closing the connection (a quit, a crash, a kill -9 of
  the TUI) detaches it. Result: ``{"pid", "session", "attached"}``.
- ``hello``: ``{"pid", "session", "attached", "states", "error"}``; changes nothing. ``error``
  is the supervisor's ``store_error`` (the store could not be written, the runs are being
  stopped) or null: a viewer polls ``hello`` to learn it, since it cannot be in the file.

or one of the supervisor's control methods named in ``COMMANDS`` (``add``, ``restart``,
``pause``, ``resume``, ``stop``, ``stop_all``, ``close``, ``states``, and ``profile`` once the
supervisor has one), called with the JSON args, its return value as the result. A ``Variant``
travels as ``{"mode": ..., "precision": ...}``, plus ``"axes": {...}`` when it has --set axes.
A name outside the whitelist, or one the supervisor lacks, is refused. An exception in the
method becomes ``{"ok": false, "error"}`` (e.g. ``no run 'x' in this session``); the daemon
goes on.

Access: the session directory is 0700 and the socket 0600 (bound under umask 077), so another
user cannot reach it; and the server reads the peer's uid with SO_PEERCRED and refuses any
uid but its own with one error line before it reads a request (root included: a root peer may
read the files anyway, but steering someone's runs is their business).

Unix socket paths are limited to 107 bytes; a longer session path is reached through
``/proc/self/fd/N/`` of an O_PATH descriptor of the directory (Linux).
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import struct
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

from tuimon.variants import Variant

SOCKET = "control.sock"
COMMANDS = ("add", "restart", "pause", "resume", "stop", "stop_all", "close", "states", "profile",
            "dump")
MAX_LINE = 1 << 16  # a request longer than this is refused (and the connection closed)
_SUN_PATH_MAX = 107


class ChannelError(Exception):
    """No daemon listens (gone, or never started), or the connection broke; one line."""


class CommandError(Exception):
    """The daemon refused or failed a command; the message is its one-line error."""


def socket_path(session_dir: str | Path) -> Path:
    return Path(session_dir) / SOCKET


@contextlib.contextmanager
def _address(path: Path) -> Iterator[str]:
    """``path`` itself, or the same file through /proc/self/fd when the path is too long."""
    text = str(path)
    if len(os.fsencode(text)) <= _SUN_PATH_MAX:
        yield text
        return
    fd = os.open(path.parent, os.O_PATH | os.O_DIRECTORY)
    try:
        yield f"/proc/self/fd/{fd}/{path.name}"
    finally:
        os.close(fd)


def peer_uid(conn: socket.socket) -> int:
    """The uid of the process at the other end of a Unix socket (Linux SO_PEERCRED)."""
    data = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    return struct.unpack("3i", data)[1]


def encode_arg(value):
    if isinstance(value, Variant):
        return value.fields()
    if isinstance(value, Path):
        return str(value)
    return value


def decode_arg(value):
    if isinstance(value, dict) and {"mode", "precision"} <= set(value) <= {"mode", "precision", "axes"}:
        return Variant.from_fields(value)
    return value


def _dumps(obj) -> bytes:
    return (json.dumps(obj, default=encode_arg, separators=(",", ":")) + "\n").encode()


def _message(exc: BaseException) -> str:
    text = exc.args[0] if isinstance(exc, KeyError) and exc.args else str(exc)
    return (str(text).strip().splitlines() or [type(exc).__name__])[0][:500]


class Server:
    """Listens on SESSION/control.sock; one thread per connection, a thread for accepting."""

    def __init__(self, session_dir: str | Path, target, *,
                 peer_uid: Callable[[socket.socket], int] = peer_uid,
                 owner_uid: int | None = None) -> None:
        self.path = socket_path(session_dir)
        self.session = str(Path(session_dir))
        self.target = target  # the Supervisor (anything with the COMMANDS it supports)
        self._peer_uid = peer_uid
        self.owner_uid = os.getuid() if owner_uid is None else owner_uid
        self._lock = threading.Lock()
        self._conns: set[socket.socket] = set()
        self._viewers: set[socket.socket] = set()
        self.ever_attached = False
        self.refused = 0  # connections refused for their uid (for tests and the log)
        self.error_told = False  # a hello reply has carried the supervisor's store error
        self._closed = threading.Event()
        self._listener: socket.socket | None = None

    # ---- lifecycle -------------------------------------------------------------------------
    def start(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()  # a socket left by a daemon that was killed
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old = os.umask(0o077)
        try:
            with _address(self.path) as address:
                listener.bind(address)
        finally:
            os.umask(old)
        os.chmod(self.path, 0o600)
        listener.listen(16)
        listener.settimeout(0.25)
        self._listener = listener
        threading.Thread(target=self._accept, name="tuimon-channel", daemon=True).start()

    def close(self) -> None:
        """Stop listening, remove the socket, end every connection (clients read EOF)."""
        self._closed.set()
        if self._listener is not None:
            self._listener.close()
        with contextlib.suppress(OSError):
            self.path.unlink()
        with self._lock:
            conns = list(self._conns)
        for conn in conns:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)

    @property
    def attached(self) -> int:
        with self._lock:
            return len(self._viewers)

    # ---- connections -----------------------------------------------------------------------
    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                conn, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return  # closed
            conn.settimeout(None)
            threading.Thread(target=self._serve, args=(conn,), name="tuimon-channel-conn",
                             daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with self._lock:
            self._conns.add(conn)
        try:
            uid = self._peer_uid(conn)
            if uid != self.owner_uid:
                self.refused += 1
                conn.sendall(_dumps({"ok": False, "error": f"refused: uid {uid} does not own this "
                                     f"session (owner uid {self.owner_uid})"}))
                conn.shutdown(socket.SHUT_WR)
                conn.settimeout(2.0)  # let it send its request and read the refusal, then go
                while conn.recv(4096):
                    pass
                return
            rest = b""
            while True:
                chunk = conn.recv(65536)
                if not chunk:
                    return
                rest += chunk
                while b"\n" in rest:
                    line, rest = rest.split(b"\n", 1)
                    if line.strip():
                        conn.sendall(_dumps(self._handle(conn, line)))
                if len(rest) > MAX_LINE:
                    conn.sendall(_dumps({"ok": False, "error": "request too long"}))
                    return
        except OSError:
            return
        finally:
            with self._lock:
                self._conns.discard(conn)
                self._viewers.discard(conn)
            conn.close()

    def _handle(self, conn: socket.socket, line: bytes) -> dict:
        try:
            request = json.loads(line)
            cmd = request["cmd"]
            args = [decode_arg(a) for a in request.get("args", [])]
            kwargs = {str(k): decode_arg(v) for k, v in request.get("kwargs", {}).items()}
        except (ValueError, KeyError, TypeError, AttributeError):
            return {"ok": False, "error": "bad request: expected {\"cmd\": NAME, \"args\": [...]}"}
        if cmd == "attach":
            with self._lock:
                self._viewers.add(conn)
                self.ever_attached = True
            return {"ok": True, "result": self._hello(conn)}
        if cmd == "hello":
            return {"ok": True, "result": {**self._hello(conn), "states": self.target.states()}}
        method = getattr(self.target, cmd, None) if cmd in COMMANDS else None
        if not callable(method):
            return {"ok": False, "error": f"unknown command {cmd!r}"}
        try:
            result = method(*args, **kwargs)
        except Exception as exc:  # noqa: BLE001 - the client gets the error, the daemon goes on
            return {"ok": False, "error": _message(exc)}
        return {"ok": True, "result": result}

    def _hello(self, conn: socket.socket) -> dict:
        error = getattr(self.target, "store_error", None)
        with self._lock:  # told a viewer, not `tuimon ls` counting them
            self.error_told = self.error_told or (bool(error) and conn in self._viewers)
        return {"pid": os.getpid(), "session": self.session, "attached": self.attached,
                "error": error}


class Client:
    """One connection to a session's daemon; ``call`` is a blocking request/reply (thread-safe)."""

    def __init__(self, session_dir: str | Path, timeout: float = 10.0) -> None:
        self.path = socket_path(session_dir)
        self.timeout = timeout
        self._lock = threading.Lock()
        self._rest = b""
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(timeout)
        try:
            with _address(self.path) as address:
                sock.connect(address)
        except OSError as exc:
            sock.close()
            raise ChannelError(f"no tuimon supervisor listens on {self.path}: "
                               f"{exc.strerror or exc}") from None
        self._sock: socket.socket | None = sock

    def call(self, cmd: str, *args, **kwargs):
        """Send one command; its result, or CommandError with the daemon's message."""
        request = {"cmd": cmd, "args": [encode_arg(a) for a in args],
                   "kwargs": {k: encode_arg(v) for k, v in kwargs.items()}}
        with self._lock:
            if self._sock is None:
                raise ChannelError("not connected")
            failure: OSError | None = None
            try:
                self._sock.sendall(_dumps(request))
            except OSError as exc:  # it may have said why before it closed: read that first
                failure = exc
            try:
                reply = self._readline()
            except OSError as exc:
                reply, failure = None, failure or exc
        if reply is None:
            why = f": {failure.strerror or failure}" if failure else ""
            raise ChannelError(f"the supervisor closed the connection{why}")
        if not reply.get("ok"):
            raise CommandError(reply.get("error") or "failed")
        return reply.get("result")

    def _readline(self) -> dict | None:
        while b"\n" not in self._rest:
            chunk = self._sock.recv(65536)
            if not chunk:
                return None
            self._rest += chunk
        line, self._rest = self._rest.split(b"\n", 1)
        return json.loads(line)

    def wait_closed(self, timeout: float) -> bool:
        """Block until the daemon closes the connection (it has exited); False on timeout."""
        with self._lock:
            if self._sock is None:
                return True
            self._sock.settimeout(timeout)
            try:
                while self._sock.recv(65536):
                    pass
            except TimeoutError:
                return False
            except OSError:
                pass
            finally:
                with contextlib.suppress(OSError):
                    self._sock.settimeout(self.timeout)
            return True

    def close(self) -> None:
        with self._lock:
            if self._sock is not None:
                self._sock.close()
                self._sock = None


def request(session_dir: str | Path, cmd: str, *args, timeout: float = 10.0, **kwargs):
    """One command on a fresh connection (for scripts and tests)."""
    client = Client(session_dir, timeout)
    try:
        return client.call(cmd, *args, **kwargs)
    finally:
        client.close()


def alive(session_dir: str | Path, timeout: float = 2.0) -> bool:
    """Whether a daemon answers on the session's socket."""
    try:
        request(session_dir, "hello", timeout=timeout)
    except (ChannelError, CommandError, OSError, ValueError):
        return False
    return True
