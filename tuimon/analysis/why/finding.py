"""What a rule of the diagnosis returns (a ``Finding``: what it found, its evidence and what to
try, each as data: a code and its figures, worded by report/why_words/) and what it reads (a
``Context``: one variant, for a compiled one its eager baseline, and their profiler captures, all
from the session's summary)."""

from __future__ import annotations

from dataclasses import dataclass, field

from tuimon.analysis.stats import RunStats, SessionSummary
from tuimon.analysis.stats.point import Point, point
from tuimon.analysis.stats.rows import columns

HIGH, MEDIUM, INFO = 3, 2, 1
# A captured step this many times the run's quick steps (p10) met something else than the
# profiler (which slows a step by ~1.5x): other processes, a compile. Its times are left out.
DISTURBED = 3.0


@dataclass
class Finding:
    rule: str  # the rule family: graph_breaks, recompiles, cudagraphs, syncs, ...
    what: Point  # what holds the variant back (its title): "<family>.<what>" and the figures
    evidence: list[Point]  # what tuimon measured that says so
    advice: list[Point]  # what to try
    severity: int = MEDIUM
    cost_ms: float | None = None  # per step, when it can be put in time (ranks findings)
    variant: str | None = None  # the run id of the row it is about (diagnose sets it)
    price: object = None  # what it costs a step or a start (why/price.py's Price; diagnose sets it)

    @property
    def code(self) -> str:
        return self.what.code


@dataclass
class Context:
    row: RunStats  # a variant (a combined row with --repeats)
    baseline: RunStats | None  # a compiled variant's eager baseline, same precision (eager: None)
    capture: dict | None  # its last usable profiler capture
    base_capture: dict | None  # the baseline's
    summary: SessionSummary
    disturbed: dict[str, Point] = field(default_factory=dict)  # "row" / "base": why its capture's
    # times are not to be trusted (its counts and names still are): capture.disturbed

    @property
    def row_timed(self) -> bool:
        return "row" not in self.disturbed

    @property
    def timed(self) -> bool:
        """Both captures' times can be read as the runs'."""
        return not self.disturbed

    @property
    def on_gpu(self) -> bool:
        return (self.row.device or "").startswith("cuda")

    @property
    def rows(self) -> list[RunStats]:
        """The session's columns (with --repeats, its combined variants)."""
        return columns(self.summary)


@dataclass
class VariantWhy:
    run: str  # the row diagnosed (its speedup, in words, is report's: report/why_text.py)
    label: str
    helped: bool  # faster than its baseline beyond noise
    findings: list[Finding] = field(default_factory=list)
    compiled: bool = True  # False: an eager variant, diagnosed for what bounds its step
    # Its speedup cannot be trusted (the row's doubts, or a busy machine): neither "helped" nor
    # "did not help" can be said of it.
    doubted: bool = False


def capture_of(row: RunStats, summary: SessionSummary) -> dict | None:
    """The row's last capture that recorded steps, a full window without compiles first; with
    --repeats, its first process's."""
    profiles = row.profiles
    if not profiles and row.processes:
        first = next((r for r in summary.runs if r.run == row.processes[0]["run"]), None)
        profiles = first.profiles if first is not None else []
    done = [p for p in profiles if p.get("state") == "done" and p.get("steps_recorded")]
    clean = [p for p in done if not p.get("partial") and not p.get("compiles")]
    chosen = clean or done
    return chosen[-1] if chosen else None


def baseline_of(row: RunStats, summary: SessionSummary) -> RunStats | None:
    rows = [r for r in columns(summary) if r.mode == "eager" and r.precision == row.precision]
    named = [r for r in rows if r.label == row.compare.baseline]
    chosen = named or rows
    return chosen[0] if chosen else None


def context(row: RunStats, summary: SessionSummary) -> Context:
    base = baseline_of(row, summary) if row.compiled else None  # eager: diagnosed on its own
    ctx = Context(row, base, capture_of(row, summary),
                  capture_of(base, summary) if base is not None else None, summary)
    for which, r, cap in (("row", row, ctx.capture), ("base", base, ctx.base_capture)):
        if cap and r is not None and r.timing.p10_ms and cap.get("step_ms", 0) > DISTURBED * r.timing.p10_ms:
            # something else slowed it (other processes, a compile): its times are left out
            ctx.disturbed[which] = point("capture.disturbed", label=r.label, steps=span(cap),
                                         step_ms=cap["step_ms"], times=cap["step_ms"] / r.timing.p10_ms,
                                         p10_ms=r.timing.p10_ms)
    return ctx


def span(p: dict) -> list[int]:
    """The steps a capture recorded (its evidence names them: 'capture of steps 11–12')."""
    return list(p.get("active_steps") or [])
