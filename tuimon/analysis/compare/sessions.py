"""The sessions of a ``tuimon compare``, each read through ``read.load_session``, and their
variants keyed for matching: (mode, precision, axis values), with only the axes that vary inside
some session in the key. An axis a session holds at one value is a setting of that session,
named among what differs, so sessions that ran the same variants at other settings still match."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from tuimon import events
from tuimon.analysis.read import load_session
from tuimon.analysis.stats import RunStats, SessionSummary
from tuimon.analysis.stats.point import Point, point
from tuimon.analysis.stats.rows import columns

Key = tuple[str, str, tuple[tuple[str, str], ...]]


@dataclass
class Session:
    path: Path
    letter: str  # A, B, C ... in the order given; A is the baseline
    meta: dict
    events: list[dict]
    summary: SessionSummary
    axes: dict[str, dict[str, str]] = field(default_factory=dict)  # row's run -> its axis values
    rows: dict[Key, RunStats] = field(default_factory=dict)
    notes: list[Point] = field(default_factory=list)  # restarted, same_recording (report/compare_text.py)

    @property
    def name(self) -> str:
        return self.meta.get("name") or self.path.name


def same_recording(a: Session, b: Session) -> bool:
    """The same session read twice (the same directory, or a copy of it): the same start and the
    same events. Nothing changed between them, whatever an interval between two sessions allows
    (issue 33.11: `tuimon compare A A --fail-if-slower 5` said it could not tell, exit 4)."""
    if a.path.resolve() == b.path.resolve():
        return True
    started = [next((e.get("t") for e in s.events if e["type"] == events.SESSION_STARTED), None)
               for s in (a, b)]
    return started[0] is not None and started[0] == started[1] and len(a.events) == len(b.events) \
        and a.meta.get("started") == b.meta.get("started")


def open_session(path: str | Path, letter: str) -> Session:
    meta, evs, summary = load_session(path)
    s = Session(Path(path), letter, meta, evs, summary)
    for r in columns(summary):  # a run's axes are its run_queued's (sessiondir/run_state.py)
        s.axes[r.run] = dict(r.axes)
    return s


def varying_axes(sessions: list[Session]) -> list[str]:
    """The axis names whose value differs between the variants of at least one session."""
    found = set()
    for s in sessions:
        names = {k for axes in s.axes.values() for k in axes}
        for name in names:
            if len({axes.get(name) for axes in s.axes.values()}) > 1:
                found.add(name)
    return sorted(found)


def key_rows(sessions: list[Session]) -> None:
    """Fill each session's ``rows``: one row per key. A variant restarted in the session has
    several runs: the last one that measured steps stands for it (said in the session's notes)."""
    axes_names = varying_axes(sessions)
    for s in sessions:
        found: dict[Key, list[RunStats]] = {}
        for r in columns(s.summary):
            axes = s.axes.get(r.run, {})
            key = (r.mode, r.precision, tuple((k, axes[k]) for k in axes_names if k in axes))
            found.setdefault(key, []).append(r)
        for key, rows in found.items():
            measured = [r for r in rows if r.timing.median_ms] or rows
            s.rows[key] = measured[-1]
            if len(rows) > 1:  # compared: its last run that measured steps
                s.notes.append(point("restarted", label=label(key), runs=len(rows), letter=s.letter,
                                     run=measured[-1].run))


def label(key: Key) -> str:
    mode, precision, axes = key
    return f"{mode}/{precision}" + "".join(f" · {k}={v}" for k, v in axes)


def matched(sessions: list[Session]) -> tuple[list[Key], list[Point]]:
    """The keys in the baseline and in at least one other session, in the baseline's order; and
    each variant left out (``only_in``: in one session only, or not in the baseline)."""
    base, others = sessions[0], sessions[1:]
    keys = [k for k in base.rows if any(k in s.rows for s in others)]
    left = []
    for s in sessions:
        for k in s.rows:
            if k not in keys:
                where = [x.letter for x in sessions if k in x.rows]
                left.append(point("only_in", label=label(k), letters=where))
    return keys, list(dict.fromkeys(left))
