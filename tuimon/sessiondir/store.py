"""The session directory: everything later (summary, replay, TUI) is computed from it alone.

Layout::

    <out>/<YYYYmmdd-HHMMSS>-<recipe>/   (under srun: <out>/slurm-<job>-<step>/<node>/)
        meta.json        command, versions, host, variants, settings, status
        events.jsonl     every event of every run, appended as it arrives
        logs/<run>.log   each run's stdout and stderr
        summary.md / summary.json / steps.csv   written at the end (tuimon summary rewrites them)

Durability. Each batch goes to the OS in ``os.write`` calls as it arrives (a crash of tuimon
loses nothing), and ``tick()`` fsyncs the file at most once per ``SYNC_S`` (power loss loses at
most that much). A write that fails (disk full, file too large, an I/O error) is cut back to the
last whole batch, so the file never ends in a torn line of ours, and raises StoreWriteError;
the batch stays pending and goes out first with the next write, if there is room again then.
``tick()`` also notices a session directory deleted under a running session (the open file's
link count drops to 0) and recreates it from what the still-open file holds.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path

from tuimon import events

META = "meta.json"
EVENTS = "events.jsonl"
SYNC_S = 1.0  # the most a power loss may cost: events are fsynced at least this often


class StoreError(Exception):
    """The session directory cannot be created or written; message is one line."""


class StoreWriteError(StoreError):
    """events.jsonl cannot be written during a session; message is one line."""


class SessionStore:
    def __init__(self, path: Path, sync_s: float = SYNC_S) -> None:
        self.path = Path(path)
        self.sync_s = sync_s
        # Read-write: after the directory is deleted, what was written is read back from here.
        self._fd = os.open(self.path / EVENTS, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o600)
        self._size = os.fstat(self._fd).st_size  # bytes of whole batches in the file
        self._pending = b""  # encoded batches a failed write left behind
        self.unwritten: list[dict] = []  # the same, as events (the summary can still use them)
        self._dirty = False  # written since the last fsync
        self._ticked = time.monotonic()
        self._meta: dict | None = None
        self.syncs = 0  # fsyncs done (for tests and the bench)

    @classmethod
    def create(cls, out_dir: str | Path, name: str, place: str | None = None) -> SessionStore:
        """A new session directory under ``out_dir``: DATE-TIME-NAME, or ``place`` (a Slurm
        job step's node: slurm-<job>-<step>/<node>, its parent shared by every node); a name taken
        gets -1, -2, ..."""
        out = Path(out_dir)
        base = out / (place or f"{time.strftime('%Y%m%d-%H%M%S')}-{name}")
        try:
            base.parent.mkdir(parents=True, exist_ok=True)
            for n in range(100):
                path = base.with_name(base.name + (f"-{n}" if n else ""))
                try:
                    path.mkdir(mode=0o700)
                    break
                except FileExistsError:
                    continue
            (path / "logs").mkdir(mode=0o700)
            return cls(path)
        except OSError as exc:
            raise StoreError(f"cannot write sessions to {out}: {exc.strerror or exc}") from None

    def log_path(self, run: str) -> Path:
        return self.path / "logs" / f"{run}.log"

    def write_meta(self, meta: dict) -> None:
        self._meta = meta  # written again if the directory has to be recreated
        write_json_atomic(self.path / META, meta)

    def append(self, batch: list[dict]) -> None:
        """Write a batch (after any still pending); StoreWriteError if it cannot be written."""
        self._pending += "".join(events.encode(e) for e in batch).encode()
        self.unwritten.extend(batch)
        self._write()

    def _write(self) -> None:
        if not self._pending:
            return
        view = memoryview(self._pending)
        try:
            while view:
                view = view[os.write(self._fd, view):]
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.ftruncate(self._fd, self._size)  # no half batch: readers see whole lines only
            raise StoreWriteError(f"cannot write to {self.path / EVENTS}: {exc.strerror or exc}") from None
        finally:
            view.release()
        self._size += len(self._pending)
        self._pending, self.unwritten, self._dirty = b"", [], True

    def tick(self) -> str | None:
        """At most once per ``sync_s``: retry pending batches, fsync, and recreate a deleted
        session directory. Returns a warning to record, if any; StoreWriteError on failure."""
        now = time.monotonic()
        if now - self._ticked < self.sync_s:
            return None
        self._ticked = now
        notice = self._recreate() if os.fstat(self._fd).st_nlink == 0 else None
        self._write()
        self.sync()
        return notice

    def sync(self) -> None:
        if not self._dirty:
            return
        try:
            os.fsync(self._fd)
        except OSError as exc:
            raise StoreWriteError(f"cannot write to {self.path / EVENTS}: {exc.strerror or exc}") from None
        self._dirty = False
        self.syncs += 1

    def _contents(self) -> bytes:
        """What was written, from the open file: there even when its directory was deleted."""
        data = bytearray()
        while len(data) < self._size:
            chunk = os.pread(self._fd, min(1 << 20, self._size - len(data)), len(data))
            if not chunk:
                break
            data += chunk
        return bytes(data)

    def read_back(self) -> tuple[list[dict], int]:
        """Every event written so far and the unreadable line count, like ``read_events`` but
        from the open file, so the end of a session summarizes all of it even if the directory
        was deleted and could not be recreated. Call it before ``close``."""
        return parse_events(self._contents().decode("utf-8", "replace").splitlines(keepends=True))

    def _recreate(self) -> str:
        """Someone deleted the session directory (``rm -rf``) while the session ran: the open
        file still holds every event, so write it out again under the same path."""
        data = self._contents()
        fd = None
        try:
            (self.path / "logs").mkdir(mode=0o700, parents=True, exist_ok=True)
            os.chmod(self.path, 0o700)
            fd = os.open(self.path / EVENTS, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC, 0o600)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
            if self._meta is not None:
                write_json_atomic(self.path / META, self._meta)
        except OSError as exc:
            if fd is not None:
                os.close(fd)  # the old, unlinked file stays the one full copy (read_back reads it)
            raise StoreWriteError(f"cannot recreate the deleted session directory {self.path}: "
                                  f"{exc.strerror or exc}") from None
        os.close(self._fd)
        self._fd, self._dirty = fd, False
        lines = data.count(b"\n")
        return (f"the session directory {self.path} was deleted while the session ran: recreated "
                f"with the {lines} events written so far (runs' logs and profiler "
                "traces from before are gone)")

    def close(self, read_back: bool = False) -> tuple[list[dict], int] | None:
        """Last try at anything pending, a last fsync, close. Never raises. ``read_back``: first
        read every event back from the open file (see ``read_back``) and return them."""
        with contextlib.suppress(OSError):
            if os.fstat(self._fd).st_nlink == 0:
                self._ticked = 0.0
                with contextlib.suppress(StoreError):
                    self.tick()
        with contextlib.suppress(StoreError, OSError):
            self._write()
            self.sync()
        stored = None
        if read_back:
            with contextlib.suppress(OSError):
                stored = self.read_back()
        with contextlib.suppress(OSError):
            os.close(self._fd)
        return stored


def write_atomic(target: Path, data: str | bytes) -> None:
    """The file whole or not at all: written beside it, then moved over it (a full disk leaves
    the old one); raises OSError."""
    tmp = target.with_name(target.name + ".tmp")
    try:
        tmp.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
        os.replace(tmp, target)
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


def write_json_atomic(path: Path, data: dict) -> None:
    write_atomic(path, json.dumps(data, indent=2, default=str) + "\n")


def read_meta(path: str | Path) -> dict:
    try:
        meta = json.loads((Path(path) / META).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return meta if isinstance(meta, dict) else {}


def read_events(path: str | Path) -> tuple[list[dict], int]:
    """All events of a session, and how many lines could not be read (a torn last line, say)."""
    with open(Path(path) / EVENTS, encoding="utf-8", errors="replace") as f:
        return parse_events(f)


def iter_events(path: str | Path, counts: dict[str, int] | None = None) -> Iterator[dict]:
    """Each event of a session in file order, a line at a time: memory stays bounded however
    long the session (tuimon export). ``counts["bad"]`` ends as the unreadable line count."""
    with open(Path(path) / EVENTS, encoding="utf-8", errors="replace") as f:
        yield from decoded(f, counts if counts is not None else {})


def decoded(lines, counts: dict[str, int]) -> Iterator[dict]:
    """The events among ``lines``; a blank line is skipped, a torn or foreign one counted."""
    counts.setdefault("bad", 0)
    for line in lines:
        event = events.decode(line)
        if event is None:
            counts["bad"] += bool(line.strip())
        else:
            yield event


def parse_events(lines) -> tuple[list[dict], int]:
    counts: dict[str, int] = {}
    out = list(decoded(lines, counts))
    return out, counts["bad"]


def is_session(path: str | Path) -> bool:
    return (Path(path) / EVENTS).is_file()


def check_session(path: str | Path, need_meta: bool = True) -> str | None:
    """Why ``path`` is not a session to read, in one line; None when it is one.

    A session has a readable meta.json (written before anything runs) and an events.jsonl with
    at least one readable event (or, just started, an empty one). Without its meta.json it is
    not a complete session (bad input), but its events are what was measured:
    ``need_meta=False`` (``tuimon summary --force``) reads them anyway."""
    p = Path(path)
    if not p.is_dir():
        why = "not a directory" if p.exists() else "no such directory"
        return f"not a tuimon session directory ({why}): {path}"
    if not is_session(p):
        return f"not a tuimon session directory (no events.jsonl): {path}"
    empty, readable = True, False
    try:
        with open(p / EVENTS, "rb") as f:
            for line in f:
                if line.strip():
                    empty = False
                    if events.decode(line.decode("utf-8", "replace")) is not None:
                        readable = True
                        break
    except OSError as exc:
        return f"cannot read {p / EVENTS}: {exc.strerror or exc}"
    if not empty and not readable:
        what = "holds no readable event (corrupt or not ours)"
        return f"not a tuimon session (its events.jsonl {what}): {path}"
    if read_meta(p):
        return None  # with events, or one that has not recorded anything yet
    if empty:
        return f"not a tuimon session (its events.jsonl is empty): {path}"
    if need_meta:
        what = "missing" if not (p / META).exists() else "unreadable"
        return (f"not a complete tuimon session (meta.json {what}): {path}; "
                "'tuimon summary --force' summarizes its events anyway")
    return None


def unreadable_note(bad: int) -> str:
    return f"events.jsonl: {bad} unreadable line{'s' if bad != 1 else ''} skipped (torn write?)"
