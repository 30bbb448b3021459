"""A runner whose supervisor is gone ends itself.

Without a supervisor nothing a run measures can be recorded, and a runner left behind holds its
memory (GPU memory too) for nobody. A runner between steps notices at once: its control pipe
reads EOF and it stops at the step boundary. One stuck inside a step (hung, or deep in a long
compile) never reads the pipe, so a watchdog thread looks at the parent instead: once the
runner has been re-parented (the supervisor died, even by SIGKILL), it interrupts the main
thread as Ctrl-C would, and after a grace period kills the runner's whole process group
(Inductor's compile workers included). A thread, not prctl(PR_SET_PDEATHSIG): that fires when
the spawning *thread* ends and is Linux only.
"""

from __future__ import annotations

import os
import signal
import threading
import time

from tuimon.envvars import SUPERVISOR_PID


def watch_parent(grace_s: float = 10.0, period_s: float = 1.0) -> threading.Thread:
    parent = int(os.environ.get(SUPERVISOR_PID) or os.getppid())

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(period_s)
        print(f"tuimon runner: the supervisor (pid {parent}) is gone; stopping", flush=True)
        os.kill(os.getpid(), signal.SIGINT)  # the main thread stops as on a stop it cannot read
        time.sleep(grace_s)
        print("tuimon runner: still running after the grace period; killing its process group",
              flush=True)
        leader = os.getpgid(0) == os.getpid()  # the supervisor starts each runner in its own group
        os.killpg(os.getpid(), signal.SIGKILL) if leader else os.kill(os.getpid(), signal.SIGKILL)

    thread = threading.Thread(target=watch, daemon=True, name="tuimon-orphan-watch")
    thread.start()
    return thread
