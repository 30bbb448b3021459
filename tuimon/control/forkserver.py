"""The fork server's parent side: one ``python -m tuimon.runner.forkserver`` a recipe session,
asked for a runner per run once it has imported torch (runner/forkserver.py says why).

It starts with the session's first run due and is never waited for: the runs that start before
it has imported torch are spawned as before (a round's runs start together), and every later one
(the next rounds, restarts, a sequential schedule's next run) forks from it. One that never gets
ready (its torch fails to import) is left alone.
A run is forked only when its environment differs from the fork server's in nothing torch reads
at import: tuimon's own variables and the compile caches' directories (read when torch
compiles); a session with a structured trace (read at import), a torchrun job or a script has
none. Off unless ``TUIMON_FORKSERVER=1`` (``enabled``).
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections import deque
from pathlib import Path

import psutil

from tuimon.envvars import FORKSERVER, FORKSERVER_FD

# What torch reads only when it compiles (checked by tests/e2e/test_forkserver_runs.py): a run may set
# its own. Every TUIMON_* variable is tuimon's, read by the runner after the fork.
LAZY = frozenset({"TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR"})
PID_WAIT_S = 30.0  # a fork answers in milliseconds; this long means the fork server is stuck


def comparable(env: dict) -> dict:
    return {k: v for k, v in env.items() if k not in LAZY and not k.startswith("TUIMON_")}


def enabled(environ=os.environ) -> bool:
    """Opt-in (TUIMON_FORKSERVER=1) for now: its imports run beside a round's first steps, and the
    sampler counts its CPU as another process's load (a false "busy" is a wrong answer)."""
    return environ.get(FORKSERVER, "0") == "1"


def for_plan(plan, log_path: Path, jobs: bool) -> ForkServer | None:
    """The session's fork server, started now: recipe runs, not torchrun jobs, not turned off."""
    if plan.program.is_script or jobs or plan.torch_trace or not enabled():
        return None
    return ForkServer({**os.environ, "PYTHONUNBUFFERED": "1", **plan.env}, log_path)


class Forked:
    """A forked runner, as the supervisor uses a ``subprocess.Popen``: its pid and its exit."""

    def __init__(self, server: ForkServer, pid: int) -> None:
        self.pid = pid
        self._server = server
        self.returncode: int | None = None

    def wait(self) -> int:
        if self.returncode is None:
            self.returncode = self._server.wait(self.pid)
        return self.returncode


class ForkServer:
    def __init__(self, env: dict, log_path: Path) -> None:
        self._env, self._log_path = env, log_path
        self._base = comparable(env)
        self._cond = threading.Condition()
        self._spawning = threading.Lock()  # one request, then its pid, at a time
        self.ready_s: float | None = None  # its import's seconds, once ready
        self._dead = False  # it ended (or will never answer again)
        self._closed = False  # no more runs are asked of it
        self._pids: deque[int] = deque()
        self._exits: dict[int, int] = {}
        self._proc: subprocess.Popen | None = None  # started when the first run is due

    def _start(self) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self._log_path.parent.mkdir(parents=True, exist_ok=True)
        try:
            with open(self._log_path, "ab") as log:
                self._proc = subprocess.Popen(
                    [sys.executable, "-m", "tuimon.runner.forkserver"], stdin=subprocess.DEVNULL,
                    stdout=log, stderr=subprocess.STDOUT, pass_fds=(theirs.fileno(),),
                    env={**self._env, FORKSERVER_FD: str(theirs.fileno())},
                    start_new_session=True)
        except OSError:
            self._dead = True
            return
        finally:
            theirs.close()
        self._sock = ours
        threading.Thread(target=self._read, daemon=True, name="tuimon-forkserver").start()

    def _read(self) -> None:
        while True:
            try:
                data = self._sock.recv(65536)
            except OSError:
                data = b""
            with self._cond:
                if not data:
                    self._dead = True
                else:
                    message = json.loads(data)
                    if "ready" in message:
                        self.ready_s = message["ready"]
                    elif "pid" in message:
                        self._pids.append(message["pid"])
                    elif "exited" in message:
                        self._exits[message["exited"]] = message["rc"]
                self._cond.notify_all()
            if not data:
                return

    def begin(self) -> None:
        """Start it (once): its imports run beside the first runs, which do not wait for them."""
        if self._proc is None and not self._dead:
            self._start()

    def takes(self, env: dict) -> bool:
        """Ready, alive, and nothing in ``env`` that torch would have read at import differs."""
        return (self.ready_s is not None and not self._dead and not self._closed
                and comparable(env) == self._base)

    def spawn(self, env: dict, cwd: str, fds: tuple[int, int, int]) -> Forked | None:
        """A runner forked with ``env`` in ``cwd`` on (log, event, control) fds; None when the
        fork server is gone (the caller spawns the run itself)."""
        with self._spawning:
            try:
                socket.send_fds(self._sock, [json.dumps({"env": env, "cwd": cwd}).encode()],
                                list(fds))
            except OSError:
                return None
            deadline = time.monotonic() + PID_WAIT_S
            with self._cond:
                while not self._pids and not self._dead and time.monotonic() < deadline:
                    self._cond.wait(0.5)
                if self._pids:
                    return Forked(self, self._pids.popleft())
        self.kill()  # stuck or dead: no later run is asked of it
        return None

    def wait(self, pid: int) -> int:
        """The exit code of a runner it forked, as Popen gives it."""
        with self._cond:
            while pid not in self._exits and not self._dead:
                self._cond.wait(0.5)
            if pid in self._exits:
                return self._exits.pop(pid)
        # Ended without telling: the runner is nobody's child now. Wait until it is gone; its
        # code is lost (its log still says how it ended).
        while True:
            try:
                if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                    break
            except psutil.Error:
                break
            time.sleep(0.1)
        return 1

    def close(self) -> None:
        """No more runs: it tells the exits of the runners still running, then ends."""
        self._closed = True
        if self._proc is None:
            return
        if self.ready_s is None:  # still importing: nothing forked yet
            self.kill()
            return
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_WR)
        try:
            self._proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.kill()

    def kill(self) -> None:
        """End it now (its runners go on: each is its own session and watches the supervisor;
        the codes of those still running are lost)."""
        self._closed = True
        if self._proc is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self._proc.pid, 9)
            self._proc.wait()
