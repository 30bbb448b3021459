"""What the report's figures read from a session: its summary (analysis computes it, as for
summary.md), each run's steps as the statistics saw them (a torchrun job's: its joined steps, the
slowest rank's, from analysis's own Collector), its pauses and turn waits, its compiles, and its
step series in bounded buckets (analysis's StepSeries: the honest downsampling the TUI's charts
use too)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from tuimon import events
from tuimon.analysis import Collector, RunStats, SessionSummary, StepSeries, columns, is_measured, step_kind
from tuimon.sessiondir import listing, merge, store


@dataclass
class Report:
    """One session, read once for every figure and section."""

    path: Path
    meta: dict
    summary: SessionSummary
    steps: dict[str, list[dict]] = field(default_factory=dict)  # run -> its steps, in order
    pauses: dict[str, list[float]] = field(default_factory=dict)  # run -> when it paused (turns too)
    compiles: dict[str, list[dict]] = field(default_factory=dict)  # run -> its compile events
    series: dict[str, StepSeries] = field(default_factory=dict)  # run -> its step-time buckets
    t0: float = 0.0  # the session's start (wall clock): the figures' time zero
    state: str = listing.UNKNOWN  # running | done | stale | ...: a live session is reported partial

    @property
    def partial(self) -> bool:
        return self.state in (listing.RUNNING, listing.STALE) or self.meta.get("status") == "running"

    def rows(self) -> list[RunStats]:
        """What the table compares (a variant's processes combined), with a steady step time."""
        return [r for r in columns(self.summary) if r.timing.median_ms]

    def processes(self, r: RunStats) -> list[str]:
        """The runs a row rests on: a combined variant's processes, else its own run."""
        return [p["run"] for p in r.processes] or [r.run]

    def steady(self, r: RunStats) -> list[float]:
        """Every steady-state step time (ms) of a row's processes: past each one's warm-up, not a
        compile, a profiled step or a script's validation gap (as the statistics count them)."""
        out = []
        for run in self.processes(r):
            start = next((p.timing.steady_from for p in self.summary.runs if p.run == run), None) or 0
            out += [s["ms"] for s in self.steps.get(run, []) if is_measured(s) and s["i"] >= start]
        return out


def read(path: str | Path, sessions: list[Path] | None = None) -> Report:
    """A session directory read and summarized, with what the figures need; ``sessions``: a
    job's nodes' sessions, read as one (sessiondir/merge.py), its report at ``path``. Raises
    OSError / ValueError when it cannot be read (the CLI says so in one line)."""
    path = Path(path)
    if sessions is not None and len(sessions) > 1:
        meta, evs, bad = merge.load(sessions)
    else:
        meta = store.read_meta(sessions[0] if sessions else path)
        evs, bad = store.read_events(sessions[0] if sessions else path)
    collector = Collector(unreadable_lines=bad)
    rep = Report(path, meta, SessionSummary([]), state=listing.state_of(meta) if meta else listing.UNKNOWN)
    for e in evs:
        joined = collector.add(e)
        kind, run = e["type"], e.get("run")
        for s in joined or ():
            rep.steps.setdefault(s["run"], []).append(s)
        if run is None or e.get("rank") not in (None, 0):
            continue  # a job's pauses and compiles: its lead rank's
        if kind == events.PHASE and e.get("phase") == "paused":
            rep.pauses.setdefault(run, []).append(e["t"])
        elif kind == events.COMPILE:
            rep.compiles.setdefault(run, []).append(e)
    rep.summary = collector.summary()
    rep.t0 = rep.summary.started_t or min((e["t"] for e in evs if "t" in e), default=0.0)
    for run, steps in rep.steps.items():
        rep.series[run] = _series(steps, rep.pauses.get(run, []))
    return rep


def _series(steps: list[dict], pauses: list[float]) -> StepSeries:
    """A run's steps into buckets that never straddle a pause (a turn wait)."""
    series, k = StepSeries(), 0
    ordered = sorted(steps, key=lambda s: s["t"])
    for s in ordered:
        while k < len(pauses) and pauses[k] <= s["t"] - s["ms"] / 1000.0:
            series.pause()
            k += 1
        series.add(s["i"], s["t"], s["ms"], s["ms"], step_kind(s))
    return series
