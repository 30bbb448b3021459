"""A comparison of sessions as data: for each variant they share, its rows in each session, the
changes against the first session (the baseline) of every figure that has one, and the
regression guard's verdict. Changes come from ``stats.change``; ``report.compare_figures`` lays
each variant's figures out as text."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TypeVar

from tuimon.analysis.compare.sessions import Key, Session, key_rows, label, matched, same_recording
from tuimon.analysis.compare.settings import differences
from tuimon.analysis.stats import RunStats
from tuimon.analysis.stats.change import (
    Change,
    load_differs,
    loss_drift,
    median_change,
    spread_change,
    step_losses,
)
from tuimon.analysis.stats.noise import (
    SESSION_SD,
    Noise,
    detectable_pct,
    measured_processes,
    pooled,
    processes_for,
    untold_change,
)
from tuimon.analysis.stats.point import Point, point

PHASES = ("dynamo", "aot", "inductor", "codegen", "backward")
SIZES = ("peak_rss", "cuda_peak_allocated", "vram_max")  # measured once per process
T = TypeVar("T")  # a figure set against the baseline's: a Change, a Point, a float


@dataclass
class VariantDiff:
    key: Key
    rows: list[RunStats | None]  # per session (None: not in that session)
    median: list[Change | None]
    compile: list[Change | None]  # cold against cold (a session before warm starts: every process)
    unreliable: list[Point | None]  # per session: other processes' load differed from A's
    phases: dict[str, list[Change | None]] = field(default_factory=dict)  # compile phase -> changes
    sizes: dict[str, list[Change | None]] = field(default_factory=dict)  # RunStats attribute -> changes
    drift: list[tuple[float | None, int]] = field(default_factory=list)  # loss vs A: (max |Δ|, steps)
    detectable: list[float | None] = field(default_factory=list)  # per session vs A: the least change
    # (%) its processes and A's tell from none, 80 % of the time (noise.py)
    warm_compile: list[Change | None] = field(default_factory=list)  # warm against warm
    untold: list[bool] = field(default_factory=list)  # per session vs A: ``detectable`` beyond
    # ×UNTOLD, no change compile commonly makes told (noise.untold_change)

    @property
    def label(self) -> str:
        return label(self.key)


@dataclass
class Comparison:
    sessions: list[Session]
    differences: list[tuple[str, list[str]]]
    variants: list[VariantDiff]
    left_out: list[Point]  # only_in: a variant not matched
    noise: Noise | None = None  # the spread between processes, pooled over every session's variants

    @property
    def notes(self) -> list[Point]:
        return [n for s in self.sessions for n in s.notes]


def compare_sessions(sessions: list[Session], session_sd: float = SESSION_SD) -> Comparison:
    """``session_sd``: σ of a session's own level on the log scale, assumed (noise.SESSION_SD):
    the machine's state, which two sessions need not share."""
    key_rows(sessions)
    for s in sessions[1:]:
        if same_recording(sessions[0], s) and not any(n.code == "same_recording" for n in s.notes):
            s.notes.append(point("same_recording", letter=s.letter))  # the guard judges nothing
    keys, left_out = matched(sessions)
    # One spread for all: every session's processes of every variant, about their own variant's.
    noise = replace(pooled([r for s in sessions for r in s.summary.variants]), session_sd=session_sd)
    return Comparison(sessions, differences(sessions), [_variant(sessions, k, noise) for k in keys],
                      left_out, noise)


def processes(r: RunStats) -> int:
    """The processes a row's median stands on (one for a plain run)."""
    return max(1, measured_processes(r)) if r.processes else 1


def _variant(sessions: list[Session], key: Key, noise: Noise) -> VariantDiff:
    rows = [s.rows.get(key) for s in sessions]
    base = rows[0]

    def against(fn: Callable[..., T | None]) -> list[T | None]:
        return [None, *(fn(base, r, s) if r is not None else None for r, s in zip(rows[1:], sessions[1:],
                                                                                     strict=True))]

    def each(s: Session, r: RunStats, value, start: str | None = None) -> list[float]:
        """Its processes' figures; with ``start``, of the processes that started so only (a
        compile figure: warm with warm, the others with the others: cold, from the user's
        --cache-dir, or recorded before warm starts)."""
        runs = {p["run"] for p in r.processes} if r.processes else {r.run}
        return [value(x) for x in s.summary.runs if x.run in runs
                and (start is None or (x.warm.start == "warm") == (start == "warm"))]

    def spread(value, start: str | None = None):
        return lambda b, r, s: spread_change(each(sessions[0], b, value, start), each(s, r, value, start))

    v = VariantDiff(key, rows, against(lambda b, r, s: median_change(b, r, noise)),
                    against(spread(lambda x: x.compile.compile_s, "cold")),
                    against(lambda b, r, s: load_differs(b, r)))
    v.warm_compile = against(spread(lambda x: x.compile.compile_s, "warm"))
    v.detectable = against(lambda b, r, s: detectable_pct(noise, processes(b), processes(r)))
    v.untold = [untold_change(least) for least in v.detectable]
    for phase in PHASES:
        v.phases[phase] = against(lambda b, r, s, p=phase: spread_change(
            [b.compile.compile_phases.get(p)], [r.compile.compile_phases.get(p)]))
    for attr in SIZES:
        v.sizes[attr] = against(spread(lambda x, a=attr: getattr(x.probes, a)))  # RunStats.probes
    v.drift = _loss_drift(sessions, rows)
    return v


def _loss_drift(sessions: list[Session], rows: list[RunStats | None]) -> list[tuple[float | None, int]]:
    """Per session: the largest loss gap to A over the steps both recorded, and how many."""
    def runs(r: RunStats) -> set[str]:
        return {p["run"] for p in r.processes} if r.processes else {r.run}

    if rows[0] is None:
        return []
    base = step_losses(sessions[0].events, runs(rows[0]))
    out: list[tuple[float | None, int]] = [(None, 0)]
    for s, r in zip(sessions[1:], rows[1:], strict=True):
        out.append(loss_drift(base, step_losses(s.events, runs(r))) if r is not None else (None, 0))
    return out


def guard(c: Comparison, slower_pct: float | None, compile_pct: float | None
          ) -> tuple[list[Point], list[Point], list[Point]]:
    """(failures, what cannot be told, what could not be judged at all), each a point naming the
    variant (``label``), the session (``letter``) and whether its load differed from A's
    (``shaky``): ``slower``, ``compile_slower`` (``start``: cold or warm), ``cannot_tell`` (with
    its ``plan``), ``no_interval``.

    A median step fails when its change is beyond noise and above ``slower_pct``. When it is not
    but its interval still reaches above ``slower_pct``, the sessions *cannot tell*: they could
    not see such a slowdown if it were there (said with the least change they can tell and the
    processes that would tell ``slower_pct``). A compile time fails when above ``compile_pct``
    and not within the spread between processes (with one process a session there is no spread
    to judge by, so the change itself counts)."""
    failures, cannot, unjudged = [], [], []
    same = {s.letter for s in c.sessions[1:] if same_recording(c.sessions[0], s)}
    for v in c.variants:
        warm = v.warm_compile[1:] or [None] * (len(c.sessions) - 1)
        for s, m, comp, shaky, least, hot in zip(c.sessions[1:], v.median[1:], v.compile[1:],
                                                 v.unreliable[1:], v.detectable[1:], warm, strict=True):
            if s.letter in same:  # A read twice: nothing changed, nothing to judge
                continue
            who = {"label": v.label, "letter": s.letter, "shaky": shaky is not None}
            if slower_pct is not None and m is not None:
                if m.significant is None:  # too few steady steps
                    unjudged.append(point("no_interval", **who))
                elif m.significant and m.pct > slower_pct:
                    failures.append(point("slower", **who, change=m, pct=slower_pct))
                elif (m.hi - 1.0) * 100.0 > slower_pct:
                    told = plan(c.noise, least, slower_pct, len(c.sessions) * len(c.variants))
                    cannot.append(point("cannot_tell", **who, change=m, pct=slower_pct, plan=told))
            for start, change in (("cold", comp), ("warm", hot)):  # cold with cold, warm with warm
                if compile_pct is not None and change is not None and change.significant is not False \
                        and change.pct > compile_pct:
                    failures.append(point("compile_slower", **who, start=start, change=change,
                                          pct=compile_pct))
    return failures, cannot, unjudged


def plan(noise: Noise | None, least: float | None, pct: float, variants: int = 2) -> Point:
    """What these sessions can tell (``least``: the least change, %) and what would tell ``pct``:
    ``processes`` (``k`` a side), ``zero`` (no count tells 0 %), ``session`` (each session's own
    level, ``session_pct``, is what no process count averages away), ``never`` (not even 20)."""
    k = processes_for(noise, pct, variants) if noise is not None and pct > 0 else None
    told = {"least": least, "untold": untold_change(least), "pct": pct}  # untold: ``least`` too wide to say
    if k:
        return point("processes", k=k, **told)
    if pct <= 0:
        return point("zero", **told)
    if noise is not None and noise.session_sd \
            and processes_for(replace(noise, session_sd=0.0), pct, variants):
        return point("session", session_pct=noise.session_pct, **told)
    return point("never", **told)
