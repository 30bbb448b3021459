"""Where the TUI's events come from: a live supervisor, or a session directory (replay)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

from tuimon import events
from tuimon.session.store import EVENTS

Deliver = Callable[[list[dict]], None]


class LiveSource:
    """Runs the supervisor on a thread of the UI process; keys become supervisor commands."""

    read_only = False

    def __init__(self, supervisor) -> None:
        self.supervisor = supervisor
        self.path: Path = supervisor.store.path
        self.status: str | None = None
        self._thread: threading.Thread | None = None

    def start(self, deliver: Deliver) -> None:
        self.supervisor.sink = deliver
        self._thread = threading.Thread(target=self._run, name="tuimon-supervisor", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        self.status = self.supervisor.run(keep_open=True)

    def close(self, timeout: float = 30.0) -> None:
        """Stop every run (each at a step boundary), then end the supervisor."""
        self.supervisor.close()
        if self._thread is not None:
            self._thread.join(timeout)

    def log_path(self, run: str) -> Path:
        return self.supervisor.store.log_path(run)

    def __getattr__(self, name: str):
        # restart / pause / resume / stop / add go straight to the supervisor.
        if name in ("restart", "pause", "resume", "stop", "add"):
            return getattr(self.supervisor, name)
        raise AttributeError(name)


class ReplaySource:
    """Reads a session's events.jsonl, then follows it while it grows (a session still running)."""

    read_only = True

    def __init__(self, path: str | Path, follow: bool = True, poll: float = 0.25) -> None:
        self.path = Path(path)
        self.follow = follow
        self.poll = poll
        self._stop = threading.Event()

    def start(self, deliver: Deliver) -> None:
        threading.Thread(target=self._tail, args=(deliver,), name="tuimon-replay",
                         daemon=True).start()

    def _tail(self, deliver: Deliver) -> None:
        rest = ""
        with open(self.path / EVENTS, encoding="utf-8", errors="replace") as f:
            while not self._stop.is_set():
                chunk = f.read(1 << 20)
                if chunk:
                    lines = (rest + chunk).split("\n")
                    rest = lines.pop()  # a line still being written
                    batch = [e for e in map(events.decode, lines) if e is not None]
                    if batch:
                        deliver(batch)
                    continue
                if not self.follow:
                    break
                self._stop.wait(self.poll)
        if rest and (e := events.decode(rest)) is not None:
            deliver([e])

    def close(self, timeout: float = 0) -> None:
        self._stop.set()

    def log_path(self, run: str) -> Path:
        return self.path / "logs" / f"{run}.log"
