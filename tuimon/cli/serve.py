"""``tuimon serve [SESSION] [--port P] [--host H]``: the TUI in a browser, through textual-serve.

Each browser tab gets a viewer process of its own (``python -m tuimon.web.tab``): the TUI as
``tuimon attach`` opens it, live on the session's daemon with working keys, or read-only once the
session has ended. Never the launcher: textual-serve starts its command once per tab, and a
launcher would start the runs again in every tab.

Bound to 127.0.0.1 by default: textual-serve has no authentication and a viewer steers the runs,
so the way in from a laptop is an SSH tunnel (the line is printed); ``--host`` binds elsewhere,
with a warning."""

from __future__ import annotations

import argparse
import errno
import getpass
import shlex
import socket
import sys
from pathlib import Path

import tuimon
from tuimon.cli.args import DEFAULT_OUT, Parser, UsageError, fps_arg, limited
from tuimon.cli.attach import resolve_session
from tuimon.exit_codes import EXIT_OK
from tuimon.sessiondir import listing, store
from tuimon.web.peers import is_loopback

DEFAULT_PORT = 8000
NO_AUTH = ("there is no authentication: anyone who can reach this address can watch the session "
           "and pause, restart or stop its runs; the default 127.0.0.1 plus an SSH tunnel is safer")


def serve_parser() -> Parser:
    p = Parser(prog="tuimon serve",
               description="The TUI in a browser: each tab is a viewer of the session, live with "
               "working keys (as tuimon attach) or read-only once it has ended (as tuimon replay).")
    p.add_argument("session", nargs="?",
                   help="a session directory (default: the latest running session under --out, "
                   "else the latest one)")
    p.add_argument("--port", type=limited("port"), default=DEFAULT_PORT,
                   help=f"TCP port to listen on (default: {DEFAULT_PORT}; 0 picks a free one)")
    p.add_argument("--host", default="127.0.0.1",
                   help="address to listen on (default: 127.0.0.1, this machine only; anything "
                   "else is reachable without authentication)")
    p.add_argument("--out", default=DEFAULT_OUT, metavar="DIR",
                   help="where to look for the latest session (default: ./tuimon-sessions)")
    p.add_argument("--fps", type=fps_arg, default=4.0, help="redraws per second (default: 4)")
    return p


def _who_listens(port: int) -> str:
    """' (by NAME, pid N)' for the process listening on ``port``, when psutil may say."""
    import psutil

    try:
        for conn in psutil.net_connections(kind="tcp"):
            if conn.status == psutil.CONN_LISTEN and conn.laddr and conn.laddr.port == port and conn.pid:
                return f" (by {psutil.Process(conn.pid).name()}, pid {conn.pid})"
    except (psutil.Error, OSError):
        pass
    return ""


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on host:port, or a UsageError that says why not."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
    except (socket.gaierror, UnicodeError) as exc:
        raise UsageError(f"--host {host}: not an address of this machine "
                         f"({getattr(exc, 'strerror', None) or exc})") from None
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # not over a live listener
        sock.bind(address)
        sock.listen(128)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise UsageError(f"port {port} on {host} is already in use{_who_listens(port)}: pick "
                             "another with --port P (--port 0 picks a free one)") from None
        if exc.errno == errno.EADDRNOTAVAIL:
            raise UsageError(f"--host {host}: not an address of this machine") from None
        if exc.errno == errno.EACCES:
            raise UsageError(f"port {port} needs privileges: use one above 1023") from None
        raise UsageError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    sock.setblocking(False)
    return sock


def url_host(ip: str) -> str:
    return f"[{ip}]" if ":" in ip else ip


def tunnel_line(ip: str, port: int) -> str:
    """The ``ssh -L`` line that reaches this server from a laptop: through the remote machine's
    loopback when the server listens there (or on every address), else through its address."""
    if ip == "0.0.0.0" or (is_loopback(ip) and ":" not in ip):
        target = "127.0.0.1"
    elif ip == "::" or is_loopback(ip):
        target = "[::1]"
    else:
        target = url_host(ip)
    return f"ssh -L {port}:{target}:{port} {getpass.getuser()}@{socket.gethostname()}"


def describe(path: Path) -> str:
    """What a tab will show, from the session's state."""
    state = listing.state_of(store.read_meta(path))
    if state == listing.RUNNING:
        if (path / "control.sock").exists():
            return "running: each tab is a live viewer, keys work as in tuimon attach"
        return "running without a control channel (headless): each tab follows it read-only"
    if state == listing.STALE:
        return "stale (its supervisor is gone): each tab shows what was recorded, read-only"
    return f"{state}: each tab is a read-only replay"


def serve_command(args: argparse.Namespace) -> int:
    try:
        from tuimon.web import server
    except ImportError as exc:  # an install without its dependencies
        raise UsageError(f"tuimon serve needs textual-serve ({exc}): pip install textual-serve") from None

    path = resolve_session(args.session, args.out).resolve()
    sock = bind(args.host, args.port)
    ip, port = sock.getsockname()[:2]
    say = lambda text: print(text, flush=True)  # noqa: E731 - read by scripts through a pipe
    if not is_loopback(ip):
        print(f"tuimon: warning: listening on {url_host(ip)}:{port}: {NO_AUTH}", file=sys.stderr,
              flush=True)
    here = "127.0.0.1" if ip == "0.0.0.0" else "::1" if ip == "::" else ip
    say(f"session: {path}\n  {describe(path)}\n"
        f"serving on http://{url_host(here)}:{port}/\n"
        f"  from a laptop: {tunnel_line(ip, port)}\n"
        f"    then open http://localhost:{port}/\n"
        "each browser tab is a viewer of its own; Ctrl-C stops the server (the runs go on)")
    # Run from the directory that holds this tuimon, so that `-m` (which puts the working
    # directory first on sys.path) finds this one, not a checkout the user stands in.
    home = Path(tuimon.__file__).resolve().parent.parent
    command = (f"cd {shlex.quote(str(home))} && exec {shlex.quote(sys.executable)} -m tuimon.web.tab "
               f"{shlex.quote(str(path))} --fps {args.fps:g}")
    open_tabs, killed = server.run(sock, command, f"{path.name} · tuimon", path.name, say)
    going = listing.state_of(store.read_meta(path)) == listing.RUNNING
    say(f"stopped ({open_tabs} tab{'s' * (open_tabs != 1)} closed"
        + (f", {killed} viewer process{'es' * (killed != 1)} killed" if killed else "") + ")"
        + (f"; the runs go on: tuimon attach {path}" if going else ""))
    return EXIT_OK
