"""Every statistic tuimon reports, computed in one place from a session's events: the UI and
the exporters call ``summarize`` and recompute none. Definitions: docs/measuring.md; one job a
module: docs/layout.md. Callers import from ``tuimon.analysis.stats``."""

from tuimon.analysis.stats.collect import Collector, LossTrack, summarize
from tuimon.analysis.stats.intervals import (
           T95,
           Z95,
           lag1_autocorr,
           median_interval,
           percentile,
           t95,
           welch_df,
)
from tuimon.analysis.stats.replicates import combine_replicates
from tuimon.analysis.stats.rows import RunStats, SessionSummary
from tuimon.analysis.stats.steady_state import HEAD, is_measured, mser5
from tuimon.analysis.stats.verdict import Verdict, decide, reliability

__all__ = ["HEAD", "T95", "Z95", "Collector", "LossTrack", "RunStats", "SessionSummary",
           "combine_replicates", "is_measured", "lag1_autocorr", "median_interval", "mser5",
           "percentile", "summarize", "t95", "welch_df", "Verdict", "decide", "reliability"]
