"""Every event the supervisor records: into the store, then to the sink (the TUI's, the headless
view's), with the store's once-a-second fsync and its deleted-directory check. The first write
that fails is the session's ``error``, handed once to ``failed`` (the supervisor then stops the
runs: what cannot be kept is not worth measuring). ``fold`` takes each event as it is recorded,
before the sink: the supervisor's reading of its own store."""

from __future__ import annotations

from collections.abc import Callable

from tuimon import events
from tuimon.sessiondir.store import SessionStore, StoreWriteError

Sink = Callable[[list[dict]], None]


class Recorder:
    def __init__(self, store: SessionStore, sink: Sink, failed: Callable[[str], None],
                 fold: Callable[[dict], None] = lambda e: None) -> None:
        self.store, self.sink, self.failed, self.fold = store, sink, failed, fold
        self.error: str | None = None  # the first failed write of the store

    def record(self, batch: list[dict]) -> None:
        try:
            self.store.append(batch)
        except StoreWriteError as exc:
            self._failed(str(exc))
        for e in batch:
            self.fold(e)
        self.sink(batch)
        self.sync()

    def sync(self) -> None:
        """The store's fsync / deleted-directory check (itself at most once a second)."""
        try:
            notice = self.store.tick()
        except StoreWriteError as exc:
            self._failed(str(exc))
            return
        if notice:
            self.record([events.make(events.WARNING, text=notice, store=True)])

    def _failed(self, message: str) -> None:
        if self.error is None:
            self.error = message
            self.failed(message)
