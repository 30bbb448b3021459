"""The change of one variant between two sessions (``tuimon compare``): the ratio of its median
steps with a 95 % interval from each session's own uncertainty (independent samples: the log
ratio's variance is the sum of theirs, ``stats.compare.ratio_interval``), significant when it
leaves out 1; a figure measured once (compile time, memory) as a plain ratio."""

from __future__ import annotations

import math
import statistics
from dataclasses import asdict, dataclass

from tuimon import events
from tuimon.analysis.stats.intervals import t95, welch_df
from tuimon.analysis.stats.load import load_figures, loads_differ
from tuimon.analysis.stats.noise import Noise, ratio_interval, untold, untold_between
from tuimon.analysis.stats.point import Point, point
from tuimon.analysis.stats.rows import RunStats


@dataclass
class Change:
    """``after / before``: above 1 means more (slower, longer, bigger)."""

    ratio: float
    lo: float | None = None  # 95 % interval of the ratio; None when there is no noise estimate
    hi: float | None = None
    significant: bool | None = None  # the interval leaves out 1; None: no interval to judge by
    untold: Point | None = None  # the interval too wide for its figure to mean anything (noise.untold)

    @property
    def pct(self) -> float:
        return (self.ratio - 1.0) * 100.0

    def to_dict(self) -> dict:
        return {**asdict(self), "pct": round(self.pct, 3),
                "untold": self.untold.to_dict() if self.untold is not None else None}


def median_change(before: RunStats, after: RunStats, noise: Noise) -> Change | None:
    """The median step of ``after`` against ``before``'s, with its 95 % interval (``noise``: the
    spread between processes, pooled over both sessions)."""
    if not before.timing.median_ms or not after.timing.median_ms:
        return None
    ratio = after.timing.median_ms / before.timing.median_ms
    interval = ratio_interval(before, after, ratio, noise)  # as a speedup's: the same two-row interval
    if interval is None:
        return Change(ratio)
    lo, hi = interval
    return Change(ratio, lo, hi, not lo <= 1.0 <= hi, untold_between(before, after, lo, hi, noise))


def spread_change(before: list[float], after: list[float]) -> Change | None:
    """A figure each process measured once (compile time, peak memory): the ratio of the
    geometric means, with a Welch interval on the logs when both sides have two processes or
    more; with one process a side, the plain ratio (no noise estimate)."""
    before = [x for x in before if x and x > 0]
    after = [x for x in after if x and x > 0]
    if not before or not after:
        return None
    la, lb = [math.log(x) for x in before], [math.log(x) for x in after]
    ratio = math.exp(statistics.fmean(lb) - statistics.fmean(la))
    if len(la) < 2 or len(lb) < 2:
        return Change(ratio)
    se_a = statistics.stdev(la) / math.sqrt(len(la))
    se_b = statistics.stdev(lb) / math.sqrt(len(lb))
    if se_a == 0 and se_b == 0:
        return Change(ratio, ratio, ratio, ratio != 1.0)
    half = t95(welch_df(se_a, len(la) - 1, se_b, len(lb) - 1)) * math.hypot(se_a, se_b)
    lo, hi = ratio * math.exp(-half), ratio * math.exp(half)
    return Change(ratio, lo, hi, not lo <= 1.0 <= hi, untold(lo, hi, "unpaired"))


def load_differs(before: RunStats, after: RunStats) -> Point | None:
    """Other processes' load differed between the two sessions' steps (a noisy neighbour in one
    of them): the change is unreliable, with both loads; None when alike or unknown."""
    if not loads_differ(before, after):  # the same thresholds as within a session
        return None
    return point("sessions_load_differ", base_load=load_figures(before), load=load_figures(after))


def step_losses(session_events: list[dict], runs: set[str]) -> dict[int, float]:
    """The losses of a variant's runs by step index (the first process's, with --repeats)."""
    out: dict[str, dict[int, float]] = {}
    for e in session_events:
        if e["type"] == events.STEP and e.get("run") in runs and e.get("loss") is not None:
            out.setdefault(e["run"], {})[e["i"]] = e["loss"]
    return out[min(out)] if out else {}  # run ids sort by round: the first process


def loss_drift(before: dict[int, float], after: dict[int, float]) -> tuple[float | None, int]:
    """The largest |loss difference| over the steps both sessions ran, and how many there were
    (same seed and batches: numerics that changed show here first)."""
    common = [i for i in after if i in before]
    if not common:
        return None, 0
    return max(abs(after[i] - before[i]) for i in common), len(common)
