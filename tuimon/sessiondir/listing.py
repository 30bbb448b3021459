"""Sessions under an --out directory and their state, for ``tuimon ls`` and ``tuimon attach``.

State, from meta.json and the owner process it names (``owner``: pid and process start time of
the process that runs the supervisor: the CLI in headless mode, the daemon when detached):

- ``running``: meta says running and the owner is alive (same pid, same start time);
- ``done`` / ``failed`` / ``interrupted``: the status the owner wrote when the session ended;
- ``stale``: meta says running but the owner is gone (killed with SIGKILL, or the machine
  rebooted): the store holds what was flushed, and ``tuimon summary`` still works on it;
- ``unknown``: no readable meta.json.
"""

from __future__ import annotations

import datetime
import os
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from tuimon.axes import text as axes_text
from tuimon.sessiondir import store
from tuimon.slurm import PREFIX

RUNNING, STALE, UNKNOWN = "running", "stale", "unknown"


def owner_info(kind: str) -> dict:
    """This process, as the owner of a session's runs (written into meta.json)."""
    return {"pid": os.getpid(), "create_time": psutil.Process().create_time(), "kind": kind}


def owner_alive(meta: dict) -> bool:
    owner = meta.get("owner") or {}
    pid = owner.get("pid")
    if not isinstance(pid, int):
        return False
    try:
        proc = psutil.Process(pid)
        created = proc.create_time()
        if proc.status() == psutil.STATUS_ZOMBIE:  # dead, not yet reaped by its new parent
            return False
    except (psutil.Error, OSError):
        return False
    # A recycled pid belongs to a process started later.
    return abs(created - float(owner.get("create_time") or 0)) < 1.0


def state_of(meta: dict) -> str:
    status = meta.get("status")
    if not status:
        return UNKNOWN
    if status == RUNNING:
        return RUNNING if owner_alive(meta) else STALE
    return str(status)


@dataclass
class SessionInfo:
    path: Path
    meta: dict = field(default_factory=dict)

    @property
    def state(self) -> str:
        return state_of(self.meta)

    @property
    def variants(self) -> str:
        return ", ".join(f"{v.get('mode')}/{v.get('precision')}{axes_text(v.get('axes') or {})}"
                         for v in self.meta.get("variants", []))

    @property
    def started(self) -> str:
        text = self.meta.get("started")
        try:
            return datetime.datetime.fromisoformat(str(text)).strftime("%Y-%m-%d %H:%M:%S")
        except (TypeError, ValueError):
            return "–"

    @property
    def recipe(self) -> str:
        recipe = self.meta.get("recipe")
        return Path(recipe).name if recipe else "–"

    @property
    def pid(self) -> int | None:
        return (self.meta.get("owner") or {}).get("pid")


def _order(info: SessionInfo) -> tuple:
    """Start order: the directory name begins with YYYYmmdd-HHMMSS ('-N' breaks a tie); a Slurm
    node's session, named by its node, by the start its meta.json says."""
    path = info.path
    stamp = path.name[:15]
    if path.parent.name.startswith(PREFIX):
        stamp = info.started.replace("-", "").replace(":", "").replace(" ", "-")
    tail = path.name.rsplit("-", 1)[-1]
    return stamp, int(tail) if tail.isdigit() and len(tail) < 3 else 0, str(path)


def sessions(out: str | Path) -> list[SessionInfo]:
    """Every session directory directly under ``out``, and each node's in a Slurm job's
    directory (slurm-<job>-<step>/<node>/, tuimon/slurm.py), oldest first."""
    out = Path(out)
    found = [p for p in out.iterdir() if p.is_dir() and store.is_session(p)]
    steps = [p for p in out.glob(f"{PREFIX}*") if p.is_dir() and not store.is_session(p)]
    found += [q for p in steps for q in p.iterdir() if q.is_dir() and store.is_session(q)]
    return sorted((SessionInfo(p, store.read_meta(p)) for p in found), key=_order)


def latest(out: str | Path) -> SessionInfo | None:
    """The latest running session under ``out``, else the latest session."""
    found = sessions(out)
    running = [s for s in found if s.state == RUNNING]
    return (running or found)[-1] if found else None
