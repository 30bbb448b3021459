"""A session read from its directory and summarized: the one place every reader (summary,
compare, the TUI's answer, export) gets a session's events and statistics from."""

from __future__ import annotations

from pathlib import Path

from tuimon.analysis.stats import SessionSummary, summarize
from tuimon.sessiondir import merge, store


def load_session(path: str | Path | list, unwritten: list[dict] | None = None,
                 stored: tuple[list[dict], int] | None = None, answer: dict | None = None
                 ) -> tuple[dict, list[dict], SessionSummary]:
    """The session as stored (``stored``: already read, e.g. by ``SessionStore.read_back``), plus
    ``unwritten``: events a failed write kept in memory only. ``path`` may be a list of several
    nodes' session directories of one torchrun job: read as one session (sessiondir/merge.py;
    merge.MergeError when they are not one job). ``answer``: horizon / loss_tolerance for the
    verdict instead of the session's own."""
    if isinstance(path, (list, tuple)) and len(path) > 1:
        meta, evs, bad = merge.load(list(path))
        evs = evs + (unwritten or [])
        return meta, evs, summarize(evs, bad, answer)
    one = path[0] if isinstance(path, (list, tuple)) else path
    meta = store.read_meta(one)
    evs, bad = stored if stored is not None else store.read_events(one)
    evs = evs + (unwritten or [])
    return meta, evs, summarize(evs, bad, answer)
