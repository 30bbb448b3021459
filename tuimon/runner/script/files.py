"""Each variant's files kept apart, in the script's own process: the script runs in its mirror
of the user's working directory (tuimon/mirror.py; built by control/files.py), and every
Python-level write goes through ``FilesApart.route`` first.

``route`` takes a path as the script gave it and how the call uses it, and returns the path
to use:
- in the mirror: the symlinked directories on the way become real ones (``materialise``) and a
  symlinked file a real one (removed for a truncating write, copied first for an append or an
  ``r+``), so the write lands in the mirror and the user's file stays as it was;
- under a directory kept apart (the working directory, the script's own), named by its own
  absolute path (``Path(__file__).resolve().parent / "ckpt"``): the same path in the mirror,
  for reads and writes alike, so the script reads back what it wrote — except a fresh name
  ``tempfile`` makes there (a script in /tmp) and what lies under it: real, since a child
  process (a compiler) is handed that path;
- anywhere else (an absolute path outside them): left alone, and said once per path
  (``on_outside``), unless it is tuimon's (the session, the Inductor and Triton caches; torch's
  default ones too), a
  device, a shared download cache (~/.cache), or the variant's own (a file created exclusively,
  a directory it made, and what is under it: tempfile's).

Wrapped: ``open`` (``io.open``, so ``pathlib`` too), ``os.open``, ``mkdir``, ``makedirs``,
``rename``, ``replace``, ``remove``, ``unlink``, ``rmdir``, ``truncate``, ``utime``, ``chmod``,
``symlink``, ``link``, ``shutil.rmtree`` and, where torch's C++ writer opens the file itself,
``torch.save`` and ``torch.jit.save`` (``torch.load`` opens its file with ``open``). A call given a
file descriptor or a ``dir_fd`` is left alone. A thread-local flag lets tuimon's own work on
the mirror through unwrapped.
"""

from __future__ import annotations

import builtins
import errno
import getpass
import io
import os
import re
import shutil
import tempfile
import threading
from collections.abc import Callable

from tuimon import mirror
from tuimon.envvars import PEAK_CACHE

READ, TRUNC, KEEP, MAKE, CHANGE = "read", "trunc", "keep", "make", "change"
# TRUNC: the file's old content goes (open "w"); KEEP: it stays (append, "r+", utime, chmod);
# MAKE: a new name, exclusively (mkdir, open "x", O_EXCL); CHANGE: a name removed or replaced.
DEVICES = ("/dev", "/proc", "/sys")


def open_kind(mode: str) -> str:
    if "w" in mode:
        return TRUNC
    if "x" in mode:
        return MAKE
    if "a" in mode or "+" in mode:
        return KEEP
    return READ


TMPFILE = getattr(os, "O_TMPFILE", 0)  # Linux: a file with no name, in the directory given


def flags_kind(flags: int) -> str:
    writes = flags & os.O_ACCMODE != os.O_RDONLY or flags & (os.O_CREAT | os.O_TRUNC | os.O_APPEND)
    if not writes:
        return READ
    if flags & os.O_CREAT and flags & os.O_EXCL or TMPFILE and flags & TMPFILE == TMPFILE:
        return MAKE  # a new name, or none (tempfile.TemporaryFile): the variant's own
    return TRUNC if flags & os.O_TRUNC else KEEP


def compiler_dirs() -> list[str]:
    """Where torch's compilers write whatever their cache directory says: Inductor's default
    one (its precompiled headers and their locks), Triton's home."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = f"uid_{os.getuid()}"
    return [os.path.join(tempfile.gettempdir(), "torchinductor_" + re.sub(r'[\\/:*?"<>|]', "_", user)),
            os.path.join(os.path.expanduser("~"), ".triton")]


class FilesApart:
    def __init__(self, settings: dict, on_outside: Callable[[str, bool], None]) -> None:
        self.root = settings["root"]
        self.apart = list(settings["apart"])
        self.hide = frozenset(settings.get("hide") or ())
        cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        tuimon = [os.environ.get(k) for k in ("TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR")]
        self.exempt = [os.path.abspath(p) for p in [*DEVICES, cache, *(settings.get("exempt") or ()),
                                                    *tuimon, *compiler_dirs()] if p]
        # the measured peaks' file, its lock and its temporary (runner/peak_bench.py): the file,
        # not its directory, which may be the working directory itself
        peaks = os.environ.get(PEAK_CACHE)
        self.peaks = os.path.abspath(peaks) if peaks else None
        self.on_outside = on_outside
        self._own: set[str] = set()  # outside paths the variant created exclusively
        self._said: set[str] = set()
        self._real: set[str] = set()  # the mirror's directories known to be real
        self._busy = threading.local()
        self.originals: dict[tuple[object, str], Callable] = {}

    # ---- where a path goes ------------------------------------------------------------------
    def route(self, file, kind: str):
        """The path to hand the real call (``file`` itself when nothing changes)."""
        if isinstance(file, int):
            return file
        try:
            text = os.fsdecode(os.fspath(file))
        except TypeError:
            return file
        if kind == READ and not os.path.isabs(text) and ".." not in text:
            return file  # the common read: inside the run's working directory, the mirror
        path = os.path.abspath(text)
        place = self.place(path)
        if place == "exempt":
            return file
        if place == "apart" and self._temp(path, kind):
            return file
        if place == "outside":
            if kind != READ:
                self._outside(path, kind)
            return file
        if place == "apart" and self._own and self._owned(path):
            return file  # under a fresh name tempfile made real (``_temp``)
        where = path if place == "mirror" else self.root + path
        if kind != READ:
            self._busy.on = True
            try:
                self._make_room(where, kind)
            finally:
                self._busy.on = False
        return where if where != path or ".." in text else file

    def place(self, path: str) -> str:
        """Where absolute ``path`` lies: in the "mirror", "exempt" (tuimon's, a device, a cache),
        "apart" (under a directory kept apart, by its own name) or "outside"."""
        if mirror.inside(path, self.root):
            return "mirror"
        if self.peaks and path.startswith(self.peaks):
            return "exempt"
        # the deeper of the two wins: a cache inside the working directory is tuimon's, a working
        # directory inside a cache (a project under ~/.cache) is kept apart (--cache-dir equal to
        # the working directory is refused: cli/run.py)
        exempt = max((len(e) for e in self.exempt if mirror.inside(path, e)), default=-1)
        apart = -1
        if not any(mirror.inside(path, h) for h in self.hide):
            apart = max((len(d) for d in self.apart if mirror.inside(path, d)), default=-1)
        if exempt > apart:
            return "exempt"
        if apart >= 0:
            return "apart"
        return "outside"

    def _temp(self, path: str, kind: str) -> bool:
        """tempfile making a fresh name in a directory kept apart (a script in /tmp): the name
        stays real, the variant's own, since a compiler or any subprocess is handed the real
        path (Inductor's header build in its mkdtemp() failed when it went to the mirror)."""
        if kind != MAKE or not getattr(self._busy, "temp", False):
            return False
        self._own.add(path)
        return True

    def made(self, file) -> None:
        """``file`` was just created exclusively: when outside, the variant's own."""
        path = os.path.abspath(os.fsdecode(os.fspath(file)))
        if self.place(path) == "outside":
            self._own.add(path)

    def _make_room(self, where: str, kind: str) -> None:
        """Materialise the mirror's symlinked directories on the way to ``where``, and give it
        its own copy of a symlinked file it will write into."""
        parts = where[len(self.root):].split(os.sep)[1:]
        here = self.root
        for name in parts[:-1]:
            here = os.path.join(here, name)
            if here in self._real:
                continue
            if os.path.islink(here):
                if not mirror.ours(here, self.root):
                    return  # the script's own link: the kernel follows it as always
                mirror.materialise(here, self.root, self.hide)
            elif not mirror.settle(here, self.root):
                return  # nothing there: the call fails, or creates, as it would have
            if os.path.isdir(here) and not os.path.islink(here):
                self._real.add(here)  # real once, real for good: the next write skips it
        if kind not in (TRUNC, KEEP) or not os.path.islink(where) or not mirror.ours(where, self.root):
            return
        if os.path.isdir(where):
            return
        if kind == KEEP and os.path.exists(where):
            tmp = f"{where}.tuimon-{os.getpid()}"
            shutil.copy2(where, tmp)
            os.replace(tmp, where)
        else:
            os.unlink(where)  # a truncating write, or a dangling link (open would create its target)

    def _outside(self, path: str, kind: str) -> None:
        if kind == MAKE:  # a new name: a file made exclusively is the variant's own
            return
        if path in self._said or self._owned(path):
            return
        self._said.add(path)
        self.on_outside(path, os.path.lexists(path))

    def _owned(self, path: str) -> bool:
        while True:
            if path in self._own:
                return True
            parent = os.path.dirname(path)
            if parent == path:
                return False
            path = parent

    # ---- the wrappers ---------------------------------------------------------------------------
    def install(self, torch=None) -> None:
        builtin_open = builtins.open
        route = self.route

        def open_(file, mode="r", *args, **kwargs):
            # An opener of the caller's own opens the file itself (through os.open, routed
            # there): tempfile.TemporaryFile's opens its directory with O_TMPFILE.
            own_opener = kwargs.get("opener") is not None or len(args) > 5 and args[5] is not None
            if isinstance(file, int) or own_opener or self._inside():
                return builtin_open(file, mode, *args, **kwargs)
            kind = open_kind(mode)
            f = builtin_open(route(file, kind), mode, *args, **kwargs)
            if kind == MAKE:
                self.made(file)
            return f

        self._set(builtins, "open", open_)
        self._set(io, "open", open_)

        def os_open(path, flags, mode=0o777, *, dir_fd=None):
            if dir_fd is not None or self._inside():
                return self.originals[os, "open"](path, flags, mode, dir_fd=dir_fd)
            kind = flags_kind(flags)
            fd = self.originals[os, "open"](route(path, kind), flags, mode)
            if kind == MAKE and not (TMPFILE and flags & TMPFILE == TMPFILE):
                self.made(path)  # created exclusively (tempfile's files): the variant's own
            return fd

        self._set(os, "open", os_open)
        for name, kind in (("mkdir", MAKE), ("makedirs", MAKE), ("remove", CHANGE),
                           ("unlink", CHANGE), ("truncate", KEEP), ("utime", KEEP), ("chmod", KEEP)):
            self._wrap_path(os, name, kind)
        for name in ("rename", "replace", "symlink", "link"):
            self._wrap_two(os, name, src=name in ("rename", "replace"))
        self._wrap_rmdir()
        self._wrap_rmtree()
        mkdtemp = tempfile.mkdtemp

        def made_temp(*args, **kwargs):  # a fresh directory of its own (TemporaryDirectory's too)
            self._busy.temp = True
            try:
                path = mkdtemp(*args, **kwargs)
            finally:
                self._busy.temp = False
            self.made(path)
            return path

        self._set(tempfile, "mkdtemp", made_temp)
        # mkstemp's and NamedTemporaryFile's one maker of a fresh name (private, hence guarded)
        if callable(mkstemp_inner := getattr(tempfile, "_mkstemp_inner", None)):

            def made_temp_file(*args, **kwargs):
                self._busy.temp = True
                try:
                    return mkstemp_inner(*args, **kwargs)
                finally:
                    self._busy.temp = False

            self._set(tempfile, "_mkstemp_inner", made_temp_file)
        if torch is not None:  # (torch.load opens its path with open(): routed as a read)
            for module in (torch, torch.serialization):
                self._wrap_arg(module, "save", 1, TRUNC)
            self._wrap_arg(torch.jit, "save", 1, TRUNC)

    def _inside(self) -> bool:
        return getattr(self._busy, "on", False)

    def _set(self, owner, name: str, fn) -> None:
        original = getattr(owner, name)
        self.originals.setdefault((owner, name), original)
        fn.__wrapped__ = original
        fn.__name__, fn.__doc__ = getattr(original, "__name__", name), getattr(original, "__doc__", None)
        setattr(owner, name, fn)

    def _wrap_path(self, owner, name: str, kind: str) -> None:
        original = getattr(owner, name)

        def call(path, *args, **kwargs):
            if kwargs.get("dir_fd") is not None or self._inside():
                return original(path, *args, **kwargs)
            return original(self.route(path, kind), *args, **kwargs)

        self._set(owner, name, call)

    def _wrap_two(self, owner, name: str, src: bool) -> None:
        """rename / replace (both names change) and symlink / link (only the new one)."""
        original = getattr(owner, name)

        def call(a, b, *args, **kwargs):
            fds = ("src_dir_fd", "dst_dir_fd", "dir_fd")
            if self._inside() or any(kwargs.get(k) is not None for k in fds):
                return original(a, b, *args, **kwargs)
            return original(self.route(a, CHANGE) if src else a, self.route(b, CHANGE), *args, **kwargs)

        self._set(owner, name, call)

    def _wrap_arg(self, owner, name: str, index: int, kind: str) -> None:
        """torch.save(obj, f): ``f`` is a path, or a file object left alone."""
        original = getattr(owner, name)

        def call(*args, **kwargs):
            if self._inside():
                return original(*args, **kwargs)
            if len(args) > index:
                args = (*args[:index], self.route(args[index], kind), *args[index + 1:])
            elif "f" in kwargs:
                kwargs["f"] = self.route(kwargs["f"], kind)
            return original(*args, **kwargs)

        self._set(owner, name, call)

    def _wrap_rmdir(self) -> None:
        """An empty directory the run sees through a symlink: the link goes, the user's stays."""
        original = os.rmdir

        def rmdir(path, *, dir_fd=None):
            if dir_fd is not None or self._inside():
                return original(path, dir_fd=dir_fd)
            where = self.route(path, CHANGE)
            target = os.fsdecode(os.fspath(where))
            if os.path.islink(target) and mirror.ours(target, self.root) and os.path.isdir(target):
                if os.listdir(target):
                    raise OSError(errno.ENOTEMPTY, os.strerror(errno.ENOTEMPTY), target)
                return self.originals[os, "unlink"](target)
            return original(where)

        self._set(os, "rmdir", rmdir)

    def _wrap_rmtree(self) -> None:
        """A tree the run sees through a symlink: the link goes (rmtree never follows links)."""
        original = shutil.rmtree

        def rmtree(path, *args, **kwargs):
            if self._inside() or kwargs.get("dir_fd") is not None:
                return original(path, *args, **kwargs)
            where = self.route(path, CHANGE)
            target = os.fsdecode(os.fspath(where))
            if os.path.islink(target) and mirror.ours(target, self.root):
                return self.originals[os, "unlink"](target)
            return original(where, *args, **kwargs)

        self._set(shutil, "rmtree", rmtree)
