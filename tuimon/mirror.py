"""A script run's own view of the filesystem (``tuimon run``: each variant's files kept apart).

A run's *mirror* is a directory ``ROOT`` (``SESSION/files/RUN``) in which an absolute path ``P``
of the user's filesystem stands at ``ROOT + P``. It starts as the chain of the working
directory's ancestors: ``ROOT`` holds one symlink per entry of ``/``, except the first directory
on the way to the working directory, which is a real directory holding one symlink per entry of
its own, and so on down to the working directory (``ROOT + cwd``, the run's cwd), whose every
entry is a symlink to the user's. Reads through it reach the user's files; a write first turns
the symlinked directories on its way into real directories of symlinks (``materialise``, one
level at a time) and the symlinked file into a real one, so it lands in the mirror and never in
the user's file (runner/script/files.py does that in the script's process).

A symlink is the mirror's own (``ours``) when it points at an absolute path outside ``ROOT``:
the links made here do; a link the script makes itself to a neighbour is relative, or inside.

Shared by both sides (control/files.py builds a mirror before the run starts; the run's hooks
extend it): no tuimon import, nothing heavy.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import threading


def inside(path: str, top: str) -> bool:
    """Whether absolute ``path`` is ``top`` or lies under it (both normalised)."""
    return path == top or path.startswith(top if top.endswith(os.sep) else top + os.sep)


def ours(link: str, root: str) -> bool:
    """Whether the symlink ``link`` (in the mirror ``root``) is one of the mirror's own."""
    try:
        target = os.readlink(link)
    except OSError:
        return False
    return os.path.isabs(target) and not inside(target, root)


def link_entries(user_dir: str, into: str, hide: frozenset[str] | set[str] = frozenset()) -> int:
    """One symlink in ``into`` per entry of ``user_dir`` (to ``user_dir/entry``), except the
    paths in ``hide`` and names ``into`` already holds. Returns how many were made."""
    made = 0
    try:
        names = os.listdir(user_dir)
    except OSError:  # unreadable: the run sees it empty, as it would fail to list it
        return 0
    for name in names:
        source = os.path.join(user_dir, name)
        if source in hide:
            continue
        try:
            os.symlink(source, os.path.join(into, name))
            made += 1
        except FileExistsError:
            continue
    return made


_lock = threading.Lock()


@contextlib.contextmanager
def locked(root: str):
    """The mirror's lock, across the threads and processes of one run (a torchrun job's ranks
    share their mirror): held while a directory is materialised."""
    with _lock:
        fd = os.open(root, os.O_RDONLY)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # closing releases the flock


def materialise(path: str, root: str, hide: frozenset[str] | set[str] = frozenset()) -> bool:
    """Turn ``path``, one of the mirror's symlinks to a directory, into a real directory holding
    one symlink per entry of that directory. True when it did. Under the lock: a process that
    finds the path missing for a moment waits for it (``settle``)."""
    with locked(root):
        if not (os.path.islink(path) and ours(path, root) and os.path.isdir(path)):
            return False
        target = os.readlink(path)
        tmp = f"{path}.tuimon-{os.getpid()}"
        os.mkdir(tmp)
        link_entries(target, tmp, hide)
        os.unlink(path)
        os.rename(tmp, path)
        return True


def settle(path: str, root: str) -> bool:
    """Whether ``path`` exists once no materialising is under way (it may be, between the
    symlink's removal and the directory's arrival)."""
    if os.path.lexists(path):
        return True
    with locked(root):
        return os.path.lexists(path)
