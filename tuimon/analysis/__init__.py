"""What *reads* a recorded session and computes answers: pure functions of its events. Never
starts a process, opens a socket or imports the control side; everyone else takes its answers
through the names below (docs/layout.md) and never recomputes them."""

from tuimon.analysis import tried
from tuimon.analysis.compare import (
    PHASES,
    Comparison,
    Session,
    VariantDiff,
    compare_sessions,
    guard,
    label,
    open_session,
)
from tuimon.analysis.read import load_session
from tuimon.analysis.stats import Collector, RunStats, SessionSummary, is_measured, known, summarize
from tuimon.analysis.stats.change import Change
from tuimon.analysis.stats.compiles import fell_back, made_graph
from tuimon.analysis.stats.live import (
    group_figures,
    loss_gap_ready,
    not_yet,
    own_time_spread,
    recent_median,
)
from tuimon.analysis.stats.load import busy, load_figures
from tuimon.analysis.stats.noise import SESSION_SD
from tuimon.analysis.stats.phases import PARTS as STEP_PARTS
from tuimon.analysis.stats.phases import SHORT as PART_SHORT
from tuimon.analysis.stats.phases import step_split
from tuimon.analysis.stats.point import Point
from tuimon.analysis.stats.rows import columns
from tuimon.analysis.stats.series import Column, StepSeries, axis_range, step_kind
from tuimon.analysis.stats.stragglers import diverging
from tuimon.analysis.stats.verdict import Verdict
from tuimon.analysis.stats.warm import counts as cache_counts
from tuimon.analysis.why import HIGH, INFO, MEDIUM, Finding, VariantWhy, diagnose

__all__ = [
    "HIGH", "INFO", "MEDIUM", "PART_SHORT", "PHASES", "SESSION_SD", "STEP_PARTS", "Change",
    "Collector", "Column", "Comparison", "Finding", "Point", "RunStats", "Session",
    "SessionSummary",
    "StepSeries", "VariantDiff", "Verdict", "VariantWhy", "axis_range", "busy", "cache_counts",
    "columns", "compare_sessions", "diagnose", "diverging", "fell_back",
    "group_figures", "guard",
    "is_measured", "known", "label", "load_figures", "load_session", "loss_gap_ready", "made_graph",
    "not_yet",
    "open_session",
    "own_time_spread", "recent_median", "step_kind", "step_split", "summarize", "tried",
]
