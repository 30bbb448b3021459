"""The log pane (``l``): the focused run's log file, its last 64 KiB when the run changes, then
what was appended since, read a few times a second by the redraw tick."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import RichLog

LOG_LINES = 200  # at most this many new lines a redraw
TAIL_BYTES = 64 * 1024


class LogTail:
    def __init__(self) -> None:
        self.run: str | None = None
        self.offset = 0

    def forget(self) -> None:
        """Read the focused run's log anew at the next redraw."""
        self.run = None

    def show(self, log: RichLog, run: str | None, label: str, path: Path | None) -> None:
        if not log.has_class("visible") or run is None or path is None:
            return
        if run != self.run:
            self.run = run
            log.clear()
            log.write(f"── {label} ({run}): {path}")
            try:
                size = path.stat().st_size
            except OSError:
                size = 0
            self.offset = max(0, size - TAIL_BYTES)
        try:
            with open(path, "rb") as f:
                f.seek(self.offset)
                data = f.read()
        except OSError:
            return
        self.offset += len(data)
        for line in data.decode("utf-8", "replace").splitlines()[-LOG_LINES:]:
            log.write(line)
