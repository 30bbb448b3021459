"""One runner child process: spawned with an event pipe and a control pipe, read by a thread.

The child writes JSON lines on its event fd (stdout and stderr go to its log file) and reads
``pause`` / ``resume`` / ``stop`` lines on its control fd (both named in its settings). The
parent holds the only write end of the control pipe, so if the parent dies the child reads EOF
and stops by itself. Each child gets its own process group: a Ctrl-C in the terminal reaches
the supervisor alone, and a signal to the group also reaches Inductor's compiler children.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import psutil

from tuimon import axes, events
from tuimon.control.forkserver import Forked, ForkServer
from tuimon.envvars import SUPERVISOR_PID
from tuimon.failures import FAULTHANDLER, plain
from tuimon.settings import Process, RunSettings
from tuimon.torchrun import recipe_command

# The directory of the sitecustomize that loads tuimon's hooks into a script (a path, not an
# import: the parent side never imports the runner).
BOOT = Path(__file__).resolve().parents[1] / "runner" / "script" / "boot"

# Called from the reader thread with (run, batch of events), and (run, None) at end of file.
Deliver = Callable[[str, "list[dict] | None"], None]


class Child:
    def __init__(self, run: str, proc: subprocess.Popen | Forked, control_fd: int) -> None:
        self.run = run
        self.proc = proc
        self.control_fd = control_fd
        self.started = time.monotonic()

    @classmethod
    def spawn(cls, settings: RunSettings, *, cache: Path, log_path: Path, deliver: Deliver,
              torch_trace: Path | None = None, job: dict | None = None,
              env_extra: dict | None = None, cwd: str | None = None,
              forks: ForkServer | None = None, **child) -> Child:
        """``settings``: the run's own (tuimon/settings.py), handed over whole as JSON in its
        environment with this process's ends of its pipes added: the recipe runner
        (``python -m tuimon.runner``) or the user's own command (a script run) reads them
        back. ``job``: a torchrun job ({"path", "token"} of the session's rank socket): the
        process spawned is torchrun, and its workers are the ranks (they inherit the settings
        and connect to the rank socket). ``cwd``: where it starts (a script run's own directory,
        control/files.py), else here; every path handed to it is absolute, so it means the same
        there. ``forks``: the session's fork server, which forks a recipe run with torch already
        imported when it can (control/forkserver.py). ``child``: the keywords of ``cls``."""
        event_r, event_w = os.pipe()
        control_r, control_w = os.pipe()
        cache = os.path.abspath(cache)
        env = {**os.environ, "PYTHONUNBUFFERED": "1", "TORCHINDUCTOR_CACHE_DIR": cache,
               SUPERVISOR_PID: str(os.getpid()),
               "TRITON_CACHE_DIR": os.path.join(cache, "triton"), **(env_extra or {})}
        program = settings.program
        if job is None:
            process = Process(event_fd=event_w, control_fd=control_r)
        else:  # a rank's events go to its own connection (runner/link.py)
            process = Process(channel=job["path"], token=job["token"])
        if not program.is_script:
            cmd = ([sys.executable, "-m", "tuimon.runner"] if job is None
                   else recipe_command(program.nproc, []))
        else:
            # --set knobs: {key} in the command, else an environment variable (tuimon/axes.py)
            cmd, knobs = axes.for_script(list(program.command), {**dict(settings.knobs),
                                                                 **dict(settings.axes)})
            env.update(knobs)
            if cwd is not None and os.sep in cmd[0] and not os.path.isabs(cmd[0]):
                # ./train.py, venv/bin/python: the program the user named, from their directory
                cmd = [os.path.normpath(os.path.join(program.cwd or os.getcwd(), cmd[0])), *cmd[1:]]
            program = replace(program, command=tuple(cmd))
            # The hooks load before the script through a sitecustomize first on the path, and
            # find this tuimon behind it.
            path = [str(BOOT), str(Path(__file__).resolve().parents[2]), env.get("PYTHONPATH")]
            env["PYTHONPATH"] = os.pathsep.join(p for p in path if p)
            if settings.threads:
                env["OMP_NUM_THREADS"] = str(settings.threads)
        env.update(replace(settings, program=program, process=process).environ())
        if torch_trace is not None:  # torch writes its structured trace there, for tlparse
            env["TORCH_TRACE"] = os.path.abspath(torch_trace)
        forkable = (forks is not None and job is None and not program.is_script
                    and torch_trace is None and forks.takes(env))
        try:
            with open(log_path, "ab") as log:
                proc = forkable and forks.spawn(env, cwd or os.getcwd(),
                                                (log.fileno(), event_w, control_r))
                if not proc:  # its own process: python -m tuimon.runner, torchrun, the script
                    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log,
                                            stderr=subprocess.STDOUT, pass_fds=(event_w, control_r),
                                            env=env, start_new_session=True, cwd=cwd)
        except BaseException:
            for fd in (event_r, control_w):
                os.close(fd)
            raise
        finally:
            os.close(event_w)  # the child's copies are its own; ours would hide its EOF
            os.close(control_r)
        # A child that does not read (still building) must never block the supervisor's loop.
        os.set_blocking(control_w, False)
        threading.Thread(target=read_events, args=(settings.run, event_r, deliver), daemon=True,
                         name=f"tuimon-read-{settings.run}").start()
        return cls(settings.run, proc, control_w, **child)

    def send(self, command: str) -> bool:
        """Write one control line; False when the child is gone or its pipe is full."""
        try:
            return os.write(self.control_fd, (command + "\n").encode()) > 0
        except OSError:  # BrokenPipeError: it exited; BlockingIOError: 64 KiB of unread lines
            return False

    def signal(self, sig: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, sig)

    def lead_time(self) -> float:
        """Seconds a stop line may take to land beyond a step (a job's scheduled pause)."""
        return 0.0

    def hang_text(self) -> str:
        """More words for a hang warning (a job names the rank the others wait for)."""
        return ""

    def reap(self) -> int:
        """Wait for the exit (its event pipe is at EOF, so it is ending); the return code."""
        rc = self.proc.wait()
        with contextlib.suppress(OSError):
            os.close(self.control_fd)
        return rc

    def groups(self) -> list[int]:
        """The process groups its processes live in: its own (DataLoader workers, Inductor's
        compile workers and a script's subprocesses inherit it)."""
        return [self.proc.pid]

    def lingering(self) -> bool:
        """After the reap: does a process of its groups still run (a worker that outlives the
        runner, a subprocess still ending)? Zombies do not count: where nothing reaps orphans
        (a container's init) they would linger for ever, doing nothing."""
        groups = set()
        for pgid in self.groups():
            try:
                os.killpg(pgid, 0)
            except ProcessLookupError:
                continue
            except PermissionError:  # not ours any more: a stranger reuses the number
                continue
            groups.add(pgid)
        if not groups:
            return False
        for pid in psutil.pids():
            try:
                if os.getpgid(pid) in groups and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                    return True
            except (OSError, psutil.Error):
                continue
        return False


def read_events(run: str, fd: int, deliver: Deliver) -> None:
    """Reader thread: whole lines from the child's pipe, one batch per read; None at EOF."""
    rest = b""
    with os.fdopen(fd, "rb", buffering=0) as pipe:
        while chunk := pipe.read(65536):
            lines = (rest + chunk).split(b"\n")
            rest = lines.pop()
            batch = [e for e in (events.decode(x.decode("utf-8", "replace")) for x in lines) if e]
            if batch:
                deliver(run, batch)
    deliver(run, None)


def log_tail(path: Path, lines: int = 15) -> str:
    """The end of a run's log, as a failure's clue: its last lines, without terminal escapes
    (a script's coloured log lines)."""
    try:
        with open(path, "rb") as f:
            f.seek(max(0, os.path.getsize(path) - 16384))
            text = f.read().decode("utf-8", "replace")
    except OSError:
        return ""
    text = plain(text).rstrip()
    fatal = text.rfind(FAULTHANDLER)
    if fatal < 0:
        return "\n".join(text.splitlines()[-lines:])
    # A native crash: faulthandler's report (every thread's Python stack) is the clue, so keep
    # it whole from its first line, with a few lines of output before it; its list of extension
    # modules says nothing.
    before = text[:fatal].splitlines()[-5:]
    report = [x for x in text[fatal:].splitlines() if not x.startswith("Extension modules:")]
    return "\n".join([*before, *report[:60]])
