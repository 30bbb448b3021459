"""The session directory: everything later (summary, replay, TUI) is computed from it alone.

Layout::

    <out>/<YYYYmmdd-HHMMSS>-<recipe>/
        meta.json        command, versions, host, variants, settings, status
        events.jsonl     every event of every run, appended and flushed as it arrives
        logs/<run>.log   each run's stdout and stderr
        summary.md / summary.json / steps.csv   written at the end (tuimon summary rewrites them)
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from tuimon import events

META = "meta.json"
EVENTS = "events.jsonl"


class StoreError(Exception):
    """The session directory cannot be created or written; message is one line."""


class SessionStore:
    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._events = open(self.path / EVENTS, "a", encoding="utf-8")  # noqa: SIM115

    @classmethod
    def create(cls, out_dir: str | Path, name: str) -> SessionStore:
        out = Path(out_dir)
        stamp = time.strftime("%Y%m%d-%H%M%S")
        try:
            out.mkdir(parents=True, exist_ok=True)
            for n in range(100):
                path = out / (f"{stamp}-{name}" + (f"-{n}" if n else ""))
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
        write_json_atomic(self.path / META, meta)

    def append(self, batch: list[dict]) -> None:
        """Append and flush: a batch arrives a few times a second per run, so this is cheap."""
        self._events.write("".join(events.encode(e) for e in batch))
        self._events.flush()

    def close(self) -> None:
        self._events.close()


def write_json_atomic(path: Path, data: dict) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, default=str) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def read_meta(path: str | Path) -> dict:
    try:
        return json.loads((Path(path) / META).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def read_events(path: str | Path) -> tuple[list[dict], int]:
    """All events of a session, and how many lines could not be read (a torn last line, say)."""
    out: list[dict] = []
    bad = 0
    with open(Path(path) / EVENTS, encoding="utf-8", errors="replace") as f:
        for line in f:
            event = events.decode(line)
            if event is None:
                bad += bool(line.strip())
            else:
                out.append(event)
    return out, bad


def is_session(path: str | Path) -> bool:
    return (Path(path) / EVENTS).is_file()
