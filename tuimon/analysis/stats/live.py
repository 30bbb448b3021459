"""The few figures a live view shows before the summary has them: the median of a run's recent
steps (headless progress), a group of ranks' figures (the rank view's node rows) and the spread of
many ranks' own times (the table's per-rank cell). Views call these instead of computing their own."""

from __future__ import annotations

import statistics
from collections.abc import Iterable

from tuimon.analysis.stats.candidates import MIN_STEADY
from tuimon.analysis.stats.rows import RunStats

MIN_LOSS_STEPS = 10  # steps two runs share before their losses' gap means anything


def recent_median(values: Iterable[float]) -> float | None:
    values = list(values)
    return statistics.median(values) if values else None


def own_time_spread(rows: list[dict]) -> tuple[dict, float, dict]:
    """(fastest rank's row, the median own time, slowest rank's row) of rows with ``own_ms``."""
    by_own = sorted(rows, key=lambda x: x["own_ms"])
    return by_own[0], statistics.median(x["own_ms"] for x in rows), by_own[-1]


def group_figures(owns: list[float], medians: list[float], losses: list[float],
                  cpus: list[float]) -> dict[str, float | None]:
    """A group of ranks as one row: the median and largest own time, the median of their median
    steps, their mean last loss and mean CPU (None where no rank has the figure)."""
    return {"own_median": statistics.median(owns) if owns else None,
            "own_max": max(owns) if owns else None,
            "median": statistics.median(medians) if medians else None,
            "loss_mean": statistics.fmean(losses) if losses else None,
            "cpu_mean": statistics.fmean(cpus) if cpus else None}


def not_yet(r: RunStats, base: RunStats | None) -> tuple[int, int] | None:
    """(steady steps, the steps the verdict weighs) while a live speedup of ``r`` against ``base``
    means nothing yet (the strip: "not yet: 6 of 20 steady steps"), or None once both have them
    (issue 33.11: a session starting read "0.70× (CI 0.00–1570.14)")."""
    few = min(r.timing.measured, base.timing.measured if base is not None else r.timing.measured)
    return (few, MIN_STEADY) if few < MIN_STEADY else None


def loss_gap_ready(r: RunStats) -> bool:
    """The losses' largest gap over the steps both runs share is worth saying (not "≤ 0 over 1
    steps")."""
    return r.loss.max_loss_diff is not None and (r.loss.common_steps or 0) >= MIN_LOSS_STEPS
