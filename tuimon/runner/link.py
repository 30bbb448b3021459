"""The runner's link to the supervisor: the pipes it was started with (``open_link``), or for a
rank of a torchrun job, who it is and its own channel.

torchrun starts its workers as new processes (``subprocess``, no inherited descriptors, each in
its own session), so a rank cannot write on the event pipe the supervisor gave torchrun. Each
rank connects instead to the session's rank socket (a Unix socket in a private directory,
control/rank_hub.py) named in its settings, says who it is in one ``hello`` line (the run's
token, torchrun's RANK / LOCAL_RANK / WORLD_SIZE ..., its pid and host), then writes its events
there as JSON lines and reads its control lines from the same connection. Nothing here talks to
the other ranks: no collective, no store, no GPU.
"""

from __future__ import annotations

import json
import os
import socket

# torchrun's worker environment: RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, GROUP_RANK
# (the node's rank), TORCHELASTIC_RUN_ID (the rendezvous id: one per job), MASTER_ADDR/PORT.


def identity(env=None) -> dict | None:
    """This process's place in its job, from torchrun's environment; None when it is no rank
    (e.g. a helper process torchrun's own interpreter starts)."""
    env = os.environ if env is None else env
    if "RANK" not in env or "LOCAL_RANK" not in env:
        return None
    try:
        rank, local = int(env["RANK"]), int(env["LOCAL_RANK"])
        world = int(env.get("WORLD_SIZE", "1"))
        local_world = int(env.get("LOCAL_WORLD_SIZE", "1"))
        node = int(env.get("GROUP_RANK", "0"))
        restart = int(env.get("TORCHELASTIC_RESTART_COUNT", "0"))
    except ValueError:
        return None
    master = f"{env.get('MASTER_ADDR', '')}:{env.get('MASTER_PORT', '')}".strip(":") or None
    return {"rank": rank, "local_rank": local, "world_size": world, "local_world_size": local_world,
            "node_rank": node, "job_id": env.get("TORCHELASTIC_RUN_ID"), "master": master,
            "host": socket.gethostname(), "restart": restart}


def connect(path: str, token: str, run: str, ident: dict) -> socket.socket:
    """The rank's channel: connected, hello sent. Blocking (event writes wait rather than drop);
    the control side reads it with MSG_DONTWAIT (runner/control_lines.py)."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(path)
        hello = {"hello": 1, "token": token, "run": run, "pid": os.getpid(), **ident}
        sock.sendall((json.dumps(hello, separators=(",", ":")) + "\n").encode())
    except BaseException:
        sock.close()
        raise
    return sock


def open_link(s, ident: dict | None):
    """The run's (``s``: its settings) emitter and control lines: on the pipes the supervisor
    gave it, or a rank's (``ident``) on its own socket. Either way it does not outlive the
    supervisor (runner/orphan.py)."""
    from tuimon.runner.control_lines import ControlLines
    from tuimon.runner.emitter import Emitter
    from tuimon.runner.orphan import watch_parent

    if ident is None:
        watch_parent()  # a supervisor killed while this run is stuck in a step: do not outlive it
        return Emitter(s.process.event_fd, s.run), ControlLines(s.process.control_fd), None
    sock = connect(s.process.channel, s.process.token, s.run, ident)
    watch_parent(parent=os.getppid())  # torchrun's agent, and the supervisor behind it
    return Emitter(sock.fileno(), s.run), ControlLines(None, sock=sock), sock
