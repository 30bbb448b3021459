"""Every statistic tuimon reports, computed in one place from a session's events.

The UI and the exporters call ``summarize``; none of them recomputes a number.

Definitions:
- measured steps: steps past warm-up in which no compile ran (a recompile is kept apart too);
- warm-up overhead: time of the steps kept apart minus what they would have cost at the
  steady-state median;
- speedup: eager median / variant median, against the eager run of the same precision and the
  same --set axis values (with --repeats, the eager run of the same round);
- axis effect: against the same mode and precision at the axes' baseline (first) values, per
  sample when their steps hold different numbers of samples;
- a variant run in several processes (--repeats K): its row combines them. Median: the geometric
  mean of the processes' medians; interval: Student's t over the K log-medians, so it covers the
  process-to-process spread (a fresh process can land ~1.5x slower on a VM) that one process's
  step-to-step interval cannot see; it is never narrower than the processes' own intervals allow;
- break-even: the step at which the variant's total time drops below eager's, i.e.
  (overhead_variant - overhead_eager) / (median_eager - median_variant); "never" when the
  variant is not faster per step;
- the verdict: the one line that answers "should I compile?" (verdict.py), from the summary alone.

One job a module: ``rows`` (RunStats, SessionSummary), ``collect`` (folding events; the
summary), ``steady_state`` (warm-up, measured steps), ``intervals`` (percentiles, t, Welch),
``compare`` (speedup, break-even, loss parity), ``replicates`` (--repeats rows), ``probes``
(probe statistics), ``load`` (other processes' load), ``axes`` (the axis effect), ``agreement``
(loss gap to the eager fp32 run) and ``verdict`` (the answer). Callers import from ``tuimon.analysis.stats``.
"""

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
