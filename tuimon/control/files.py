"""A script run's files kept apart (``tuimon run``): each run works in its own mirror of the
user's working directory (tuimon/mirror.py), so variants running at once never overwrite each
other's checkpoints, nor a file the user had.

Here, on the supervisor's side: the run's mirror built before it starts (``build``), the files it
wrote listed when it exits (``outputs``), and the safety net for what the script's hooks cannot
see (a C extension or a subprocess writing through a symlink): the user's directories before
and after the session (``snapshot`` and ``changes``), bounded.
"""

from __future__ import annotations

import os
import shutil
import stat
from collections import deque
from pathlib import Path

from tuimon import events
from tuimon.mirror import inside, link_entries, materialise
from tuimon.settings import Program

FILES = "files"  # the session's subdirectory: one mirror per run
MAX_LISTED = 100  # a run's outputs named in its event (the largest first); the rest counted
MAX_WALK = 20_000  # entries a listing or a snapshot visits at most
SKIP = {".git", "__pycache__"}  # not watched: git's and Python's own bookkeeping


def apart(program: Program) -> list[str]:
    """The directories whose files a run sees through its mirror and writes into its own: the
    working directory, and the script's own directory when it lies elsewhere."""
    dirs = [os.path.realpath(program.cwd)]
    if program.script:
        home = os.path.dirname(os.path.realpath(program.script))
        if not any(inside(home, d) for d in dirs):
            dirs.append(home)
    return dirs


def hidden(session: Path, cwd: str) -> set[str]:
    """What no mirror shows: this session's directory and the sessions beside it (--out), unless
    --out is the working directory itself or above it."""
    session_dir = os.path.realpath(session)
    out = os.path.dirname(session_dir)
    return {session_dir} | ({out} if not inside(cwd, out) else set())


def mirror_root(session: Path, run: str) -> str:
    return os.path.join(os.path.realpath(session), FILES, run)


def build(root: str, cwd: str, hide: set[str]) -> str:
    """The run's mirror, from ``/`` down to the working directory ``cwd`` (real, absolute): every
    ancestor a real directory of symlinks, so ``../data`` reads what it always read. Returns the
    run's working directory in it."""
    if os.path.lexists(root):  # a run id is never reused; a leftover from a crash is stale
        shutil.rmtree(root)
    os.makedirs(root)
    link_entries(os.sep, root, hide)
    here = root
    for part in Path(cwd).parts[1:]:
        here = os.path.join(here, part)
        materialise(here, root, hide)
    return root + cwd


def outputs(root: str, cwd: str) -> dict:
    """What a run wrote into its mirror: its real files (symlinks are the user's), the largest
    first, each as the path the script gave it (relative to the working directory when inside
    it) and its bytes."""
    found, walked = [], 0
    todo = deque([root])
    while todo and walked < MAX_WALK:
        top = todo.popleft()
        try:
            entries = list(os.scandir(top))
        except OSError:
            continue
        for entry in entries:
            walked += 1
            if entry.is_symlink():
                continue
            if entry.is_dir(follow_symlinks=False):
                todo.append(entry.path)
            elif entry.is_file(follow_symlinks=False):
                try:
                    size = entry.stat(follow_symlinks=False).st_size
                except OSError:
                    continue
                user = entry.path[len(root):]
                found.append((os.path.relpath(user, cwd) if inside(user, cwd) else user, size))
    found.sort(key=lambda f: (-f[1], f[0]))
    return {"dir": root + cwd, "files": [{"path": p, "bytes": n} for p, n in found[:MAX_LISTED]],
            "count": len(found), "bytes": sum(n for _, n in found), "partial": bool(todo)}


def snapshot(dirs: list[str], hide: set[str]) -> tuple[dict[str, tuple], set[str]]:
    """(path -> (kind, size, mtime, inode), the directories listed whole): breadth first, at most
    MAX_WALK entries; symlinked directories are not followed (a symlinked file is: a write
    through it changes it)."""
    seen: dict[str, tuple] = {}
    listed: set[str] = set()
    todo = deque(dirs)
    while todo and len(seen) < MAX_WALK:
        top = todo.popleft()
        try:
            entries = list(os.scandir(top))
        except OSError:
            continue
        listed.add(top)
        for entry in entries:
            if entry.name in SKIP or entry.path in hide:
                continue
            try:
                st = entry.stat(follow_symlinks=not entry.is_dir(follow_symlinks=False))
            except OSError:
                seen[entry.path] = ("broken",)
                continue
            if stat.S_ISDIR(st.st_mode) and entry.is_symlink():
                # a symlinked directory is its link (an earlier session's mirror links /tmp,
                # whose time changes with every file made anywhere in it)
                seen[entry.path] = ("link", os.readlink(entry.path))
            elif stat.S_ISDIR(st.st_mode):
                seen[entry.path] = ("dir",)
                todo.append(entry.path)
            else:
                seen[entry.path] = ("file", st.st_size, st.st_mtime_ns, st.st_ino)
    return seen, listed


def changes(before: tuple[dict, set], after: tuple[dict, set]) -> list[dict]:
    """What changed between two snapshots: paths added, changed or removed. A bounded walk knows
    only the directories it listed whole: a path counts as added (removed) only when its
    directory was listed before (after)."""
    (was, listed_before), (now, listed_after) = before, after
    out = [{"path": p, "change": "changed"} for p, v in was.items() if p in now and now[p] != v]
    out += [{"path": p, "change": "removed"} for p in was
            if p not in now and os.path.dirname(p) in listed_after]
    out += [{"path": p, "change": "added"} for p in now
            if p not in was and os.path.dirname(p) in listed_before]
    return sorted(out, key=lambda c: c["path"])


class Apart:
    """A session's files kept apart, for the supervisor: each script run's mirror and working
    directory (``spawn``), what it wrote (``exited``), and the user's directories before the
    first run (``start``) against after the last (``end``). Off for recipes and ``--in-place``."""

    def __init__(self, session: Path, program: Program, record) -> None:
        self.on = program.is_script and not program.in_place and bool(program.cwd)
        self.session = Path(session)
        self.record = record  # the supervisor's: a run whose mirror cannot be built says so
        if not self.on:
            return
        self.cwd = os.path.realpath(program.cwd)
        self.dirs = apart(program)
        self.hide = hidden(self.session, self.cwd)
        self._before: tuple[dict, set] | None = None

    def start(self) -> None:
        if self.on:
            self._before = snapshot(self.dirs, self.hide)

    def spawn(self, run: str) -> tuple[dict | None, str | None]:
        """The run's ``files`` setting (runner/script/files.py; None: not kept apart), and the
        working directory to start it in (None: the user's own)."""
        if not self.on:
            return None, None
        root = mirror_root(self.session, run)
        try:
            cwd = build(root, self.cwd, self.hide)
        except OSError as exc:  # no symlinks on this filesystem, say: run as it would alone
            self.record([events.make(events.WARNING, run, text=(
                f"its files are not kept apart: cannot make its own directory in {root} "
                f"({exc.strerror or exc}); it runs in {self.cwd} and writes there"))])
            return None, None
        files = {"root": root, "apart": self.dirs, "hide": sorted(self.hide),
                 "exempt": [os.path.realpath(self.session)]}
        return files, cwd

    def exited(self, run: str) -> list[dict]:
        root = mirror_root(self.session, run)
        if not self.on or not os.path.isdir(root):
            return []
        return [events.make(events.FILES, run, **outputs(root, self.cwd))]

    def end(self) -> list[dict]:
        if not self.on or self._before is None:
            return []
        found = changes(self._before, snapshot(self.dirs, self.hide))
        for c in found:  # as the user names them: from their working directory
            if inside(c["path"], self.cwd):
                c["path"] = os.path.relpath(c["path"], self.cwd)
        return [events.make(events.FILES_CHANGED, dirs=self.dirs, changes=found[:MAX_LISTED],
                            count=len(found))]
