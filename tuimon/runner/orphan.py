"""A runner whose supervisor is gone ends itself.

Without a supervisor nothing a run measures can be recorded, and a runner left behind holds its
memory (GPU memory too) for nobody. A runner between steps notices at once: its control pipe
reads EOF and it stops at the step boundary. One stuck inside a step (hung, or deep in a long
compile) never reads the pipe, so a watchdog thread looks at the parent instead: once the
runner has been re-parented (the supervisor died, even by SIGKILL), it interrupts the main
thread as Ctrl-C would, and after a grace period kills the runner's whole process group
(Inductor's compile workers included). A thread, not prctl(PR_SET_PDEATHSIG): that fires when
the spawning *thread* ends and is Linux only.

A rank of a torchrun job is torchrun's child, not the supervisor's: it watches both (``parent``:
torchrun's agent; the supervisor by its pid), so a rank outlives neither. So does a runner
forked by the session's fork server (runner/forkserver.py), which ends with the supervisor.
"""

from __future__ import annotations

import os
import signal
import threading
import time

from tuimon.envvars import SUPERVISOR_PID


def hear_sigint() -> None:
    """SIGINT stops a run (the watchdog below, the supervisor's stop escalation, --steps in a
    script). A tuimon started in the background by a shell (``tuimon ... &``, nohup, a CI
    job) hands SIGINT on *ignored*, and Python then leaves it ignored: undo that here."""
    if (signal.getsignal(signal.SIGINT) is signal.SIG_IGN
            and threading.current_thread() is threading.main_thread()):
        signal.signal(signal.SIGINT, signal.default_int_handler)


def watch_parent(grace_s: float = 10.0, period_s: float = 1.0,
                 parent: int | None = None) -> threading.Thread:
    hear_sigint()
    supervisor = int(os.environ.get(SUPERVISOR_PID) or 0) or None
    agent = parent is not None  # torchrun's
    if parent is None and supervisor and os.getppid() != supervisor:
        parent = os.getppid()  # forked by the session's fork server (runner/forkserver.py)
    watched = parent or supervisor or os.getppid()
    also = supervisor if parent is not None and supervisor != parent else None

    def alive(pid: int | None) -> bool:
        if pid is None:
            return True
        try:
            os.kill(pid, 0)
        except OSError:  # gone (or the pid reused by another user's process: ours is gone)
            return False
        return True

    def watch() -> None:
        while os.getppid() == watched and alive(also):
            time.sleep(period_s)
        if agent and os.getppid() != watched:
            who = f"its parent, torchrun's agent (pid {watched}),"
        else:
            who = f"the supervisor (pid {also or watched})"
        print(f"tuimon runner: {who} is gone; stopping", flush=True)
        os.kill(os.getpid(), signal.SIGINT)  # the main thread stops as on a stop it cannot read
        time.sleep(grace_s)
        print("tuimon runner: still running after the grace period; killing its process group",
              flush=True)
        leader = os.getpgid(0) == os.getpid()  # the supervisor starts each runner in its own group
        os.killpg(os.getpid(), signal.SIGKILL) if leader else os.kill(os.getpid(), signal.SIGKILL)

    thread = threading.Thread(target=watch, daemon=True, name="tuimon-orphan-watch")
    thread.start()
    return thread
