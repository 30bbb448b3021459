"""python -m tuimon.runner.forkserver: torch imported once, then one fork per recipe run.

Every recipe runner spends its first seconds importing torch and torch._dynamo (which
``torch.optim`` pulls in): ~4 s of a 2-core machine's CPU, paid again by every process of every
variant of every round. This process pays it once per session and forks a runner per request;
the fork runs ``tuimon.runner.__main__.main`` exactly as ``python -m tuimon.runner`` would.

Only what torch reads lazily may differ between this process's environment and a run's (the
parent checks that before it asks: control/forkserver.py), and nothing here touches a device
or runs an op, so a forked runner measures what a fresh one would. The process stays
single-threaded on the Python side (fork copies only the calling thread): one loop over one
socket, children reaped with WNOHANG between reads.

Protocol, on a SOCK_SEQPACKET socket (one message a datagram, fds alongside):
  parent → here: {"env": {...}, "cwd": str} with fds [log, event pipe, control pipe]
  here → parent: {"ready": seconds to import}, {"pid": n} per fork, {"exited": pid, "rc": rc}
The supervisor's end shut (it is done, or gone) ends the requests; this process tells the exits
of its forks still running, then ends. Each fork also watches the supervisor itself
(runner/orphan.py).
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import socket
import sys
import time
from dataclasses import replace

from tuimon.envvars import FORKSERVER_FD, SETTINGS
from tuimon.settings import Process, RunSettings

POLL_S = 0.1  # how soon an exit is told when no request comes


def preload() -> float:
    """Import what every runner imports before its first step; the seconds it took."""
    t0 = time.perf_counter()
    import torch  # noqa: F401
    import torch._dynamo  # noqa: F401
    import torch.optim  # noqa: F401

    import tuimon.runner.__main__  # noqa: F401
    import tuimon.runner.compile_watch  # noqa: F401
    import tuimon.runner.recipe_loop  # noqa: F401
    return time.perf_counter() - t0


def send(sock: socket.socket, message: dict) -> None:
    with contextlib.suppress(OSError):  # the supervisor is gone: the loop reads EOF next
        sock.send(json.dumps(message).encode())


def exit_code(status: int) -> int:
    """A wait status as subprocess.Popen reports it: the code, or minus the signal."""
    return -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)


def reap(sock: socket.socket) -> bool:
    """Tell every exit so far; whether a fork still runs."""
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return False
        if pid == 0:
            return True
        send(sock, {"exited": pid, "rc": exit_code(status)})


def serve(sock: socket.socket, preloaded_s: float) -> int | None:
    """Fork a runner per request until the supervisor says no more (its end of the socket shut),
    then tell the exits of the forks still running. Returns None here, and the runner's exit
    code in a fork (which then leaves this loop and ends as ``python -m tuimon.runner`` would)."""
    send(sock, {"ready": preloaded_s})
    accepting = True
    while True:
        if not reap(sock) and not accepting:
            return None
        readable, _, _ = select.select([sock] if accepting else [], [], [], POLL_S)
        if not readable:
            continue
        try:
            data, fds, _, _ = socket.recv_fds(sock, 1 << 20, 3)
        except OSError:
            data, fds = b"", []
        if not data:
            accepting = False
            continue
        request = json.loads(data)
        pid = os.fork()
        if pid == 0:
            return run_forked(sock, request, fds, preloaded_s)
        for fd in fds:
            os.close(fd)
        send(sock, {"pid": pid})


def run_forked(sock: socket.socket, request: dict, fds: list[int], preloaded_s: float) -> int:
    """In the fork: become the process ``python -m tuimon.runner`` would have been, then run."""
    sock.close()
    os.setsid()  # its own process group, as start_new_session gives a spawned runner
    for sig in (signal.SIGCHLD, signal.SIGTERM):
        signal.signal(sig, signal.SIG_DFL)
    # as Python starts every interpreter: a write to a pipe whose reader is gone raises (the
    # supervisor's death is then said and stopped on, runner/orphan.py), never kills silently
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    log, event_fd, control_fd = fds
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(log, 1)
    os.dup2(log, 2)
    for fd in (null, log):
        os.close(fd)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    # The settings name the fds the parent opened; here they arrived under other numbers.
    settings = RunSettings.from_env()
    if settings is None:
        print(f"tuimon fork server: no {SETTINGS} in the request", file=sys.stderr)
        return 2
    settings = replace(settings, process=Process(event_fd=event_fd, control_fd=control_fd,
                                                 preloaded_s=preloaded_s))
    sys.argv = [sys.argv[0]]
    from tuimon.runner.__main__ import main

    return main(settings)


def main() -> int:
    sock = socket.socket(fileno=int(os.environ.pop(FORKSERVER_FD)))
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the supervisor ends it by closing the socket
    code = serve(sock, round(preload(), 3))
    return 0 if code is None else code


if __name__ == "__main__":
    from tuimon.runner.__main__ import leave

    leave(main())  # a fork ends as the runner it became; this process as quickly
