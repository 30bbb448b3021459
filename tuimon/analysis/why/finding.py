"""What a rule of the diagnosis returns (a ``Finding``: what, its evidence, what to try) and what
it reads (a ``Context``: one variant, for a compiled one its eager baseline, and their profiler
captures, all from the session's summary)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from tuimon.analysis.stats import RunStats, SessionSummary
from tuimon.analysis.stats.rows import columns
from tuimon.fmt import fmt_ms

HIGH, MEDIUM, INFO = 3, 2, 1
# A captured step this many times the run's quick steps (p10) met something else than the
# profiler (which slows a step by ~1.5x): other processes, a compile. Its times are left out.
DISTURBED = 3.0


@dataclass
class Finding:
    rule: str  # the rule family: graph_breaks, recompiles, cudagraphs, syncs, ...
    title: str  # one line: what holds the variant back
    evidence: list[str]  # what tuimon measured that says so
    advice: list[str]  # what to try
    severity: int = MEDIUM
    cost_ms: float | None = None  # per step, when it can be put in time (ranks findings)

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class Context:
    row: RunStats  # a variant (a combined row with --repeats)
    baseline: RunStats | None  # a compiled variant's eager baseline, same precision (eager: None)
    capture: dict | None  # its last usable profiler capture
    base_capture: dict | None  # the baseline's
    summary: SessionSummary
    disturbed: dict[str, str] = field(default_factory=dict)  # "row" / "base": why its capture's
    # times are not to be trusted (its counts and names still are)

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
    run: str
    label: str
    speedup: str | None  # "0.91× eager/fp32 (95 % CI 0.82–1.02), within noise"; None: no baseline
    helped: bool  # faster than its baseline beyond noise
    findings: list[Finding] = field(default_factory=list)
    compiled: bool = True  # False: an eager variant, diagnosed for what bounds its step

    def to_dict(self) -> dict:
        return {"run": self.run, "label": self.label, "compiled": self.compiled,
                "speedup": self.speedup, "helped": self.helped,
                "findings": [f.to_dict() for f in self.findings]}


def capture_of(row: RunStats, summary: SessionSummary) -> dict | None:
    """The row's last capture that recorded steps, a full window without compiles first; with
    --repeats, its first process's."""
    profiles = row.profiles
    if not profiles and row.processes:
        first = next((r for r in summary.runs if r.run == row.processes[0]["run"]), None)
        profiles = first.profiles if first is not None else []
    done = [p for p in profiles if p.get("state") == "done" and p.get("steps_recorded")]
    clean = [p for p in done if not p.get("partial") and not p.get("compiles")]
    return (clean or done or [None])[-1]


def baseline_of(row: RunStats, summary: SessionSummary) -> RunStats | None:
    rows = [r for r in columns(summary) if r.mode == "eager" and r.precision == row.precision]
    named = [r for r in rows if r.label == row.baseline]
    return (named or rows or [None])[0]


def context(row: RunStats, summary: SessionSummary) -> Context:
    base = baseline_of(row, summary) if row.compiled else None  # eager: diagnosed on its own
    ctx = Context(row, base, capture_of(row, summary),
                  capture_of(base, summary) if base is not None else None, summary)
    for which, r, cap in (("row", row, ctx.capture), ("base", base, ctx.base_capture)):
        if cap and r is not None and r.p10_ms and cap.get("step_ms", 0) > DISTURBED * r.p10_ms:
            ctx.disturbed[which] = (f"{r.label}'s {span(cap)} ran at {fmt_ms(cap['step_ms'])} a step, "
                                    f"{cap['step_ms'] / r.p10_ms:.0f}× its run's quick steps (p10 "
                                    f"{fmt_ms(r.p10_ms)}): something else slowed it (other processes, "
                                    "a compile), so its times are left out")
    return ctx


def span(p: dict) -> str:
    """'the capture of steps 11–12' for evidence lines."""
    steps = p.get("active_steps") or []
    return f"capture of steps {steps[0]}–{steps[-1]}" if steps else "capture"
