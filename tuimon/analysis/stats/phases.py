"""Where a step goes (docs/measuring.md#where-the-step-goes-its-phases): each steady phase's
median, p10–p90, mean and share, and a variant's effect on each against its eager baseline with
the step's honest interval (noise.py's ``ratio_interval``). "other" is the step less the phases
seen, so a phase not seen is inside it, never guessed; shares are of the mean step so they sum
to 100 %."""

from __future__ import annotations

import math
import statistics
from dataclasses import replace

from tuimon.analysis.stats.compare import same_round
from tuimon.analysis.stats.intervals import Z95, lag1_autocorr, median_interval, percentile
from tuimon.analysis.stats.noise import Noise, ratio_interval, untold_between
from tuimon.analysis.stats.records import Phases, Timing
from tuimon.analysis.stats.rows import RunStats
from tuimon.events import OTHER, STEP_PHASES

PARTS = (*STEP_PHASES, OTHER)
SHORT = {"data": "data", "forward": "fwd", "backward": "bwd", "optimizer": "opt", "eval": "eval",
         "other": "other"}
SEEN = STEP_PHASES[:4]  # the parts a step is seen to have or not (None); eval is there or 0
EVAL = len(SEEN)  # eval's place in ``ph``
MIN_STEPS = 3  # steady steps with a split a run needs for its phases
RHO_STEPS = 1000  # a phase's lag-1 autocorrelation: from its latest steps this many
# A phase this small a share of both steps (or under MIN_MS) gets no speedup: a ratio of two
# specks is noise, whatever it reads.
MIN_SHARE = 0.02
MIN_MS = 0.005


def phase_stats(steady: list[dict]) -> Phases:
    """A run's ``step_phases`` (phase -> {median_ms, p10_ms, p90_ms, mean_ms, share, ci_lo, ci_hi})
    and ``phases_missing`` from its steady steps (in step order). Figures are computed in µs (the
    events' unit) and scaled once: a live view recomputes them every second or so."""
    split = [s for s in steady if s.get("ph")]
    found: dict[str, dict] = {}
    missing: list[str] = []
    if len(split) < MIN_STEPS:
        return Phases()
    n = len(split)
    phs = [s["ph"] for s in split]
    columns = list(zip(*(ph[:EVAL] for ph in phs), strict=False))  # a column a phase, µs
    series: dict[str, list] = {}
    for name, col in zip(SEEN, columns, strict=False):
        if col.count(None) * 2 > n:  # not seen in most steps: in other
            missing.append(name)
        else:
            series[name] = [v or 0 for v in col] if None in col else list(col)
    if any(len(ph) > EVAL for ph in phs):  # eval forwards inside the steps
        series["eval"] = [(ph[EVAL] or 0) if len(ph) > EVAL else 0 for ph in phs]
    seen = list(series.values())
    step_us = [s["ms"] * 1000.0 for s in split]
    if len(seen) == len(SEEN):  # the usual case, without a sum() a step
        series[OTHER] = [max(0.0, t - a - b - c - d) for t, a, b, c, d in zip(step_us, *seen, strict=True)]
    else:
        series[OTHER] = [max(0.0, t - sum(parts)) for t, *parts in zip(step_us, *seen, strict=True)]
    mean_step = math.fsum(step_us) / n
    for name, values in ((p, series[p]) for p in PARTS if p in series):
        ordered = sorted(values)
        # The neighbours' correlation from the latest steps (enough to widen the interval).
        lo, hi = median_interval(ordered, lag1_autocorr(values[-RHO_STEPS:]))
        mean = math.fsum(values) / n
        middle = (ordered[(n - 1) // 2] + ordered[n // 2]) / 2
        found[name] = {
            "median_ms": middle / 1000.0, "p10_ms": percentile(ordered, 0.10) / 1000.0,
            "p90_ms": percentile(ordered, 0.90) / 1000.0, "mean_ms": mean / 1000.0,
            "share": mean / mean_step if mean_step > 0 else None, "ci_lo": lo / 1000.0,
            "ci_hi": hi / 1000.0}
    return Phases(found, missing)


def combine_phases(group: list[RunStats]) -> Phases:
    """A --repeats variant's phases from its processes': the median of their medians (p10, p90
    alike), the mean of their means, and what the processes' own intervals allow for the
    speedup's interval (``within_log_se``, as replicates.py for the step)."""
    measured = [r for r in group if r.phases.step_phases]
    if not measured:
        return Phases()
    found: dict[str, dict] = {}
    for name in PARTS:
        parts = [r.phases.step_phases[name] for r in measured if name in r.phases.step_phases]
        if len(parts) < len(measured):
            continue
        out = {key: statistics.median(p[key] for p in parts) for key in ("median_ms", "p10_ms", "p90_ms")}
        out["mean_ms"] = statistics.fmean(p["mean_ms"] for p in parts)
        shares = [p["share"] for p in parts if p["share"] is not None]
        out["share"] = statistics.fmean(shares) if shares else None
        out["process_medians"] = [p["median_ms"] for p in parts]
        ses = [_log_se(p) for p in parts]
        out["within_log_se"] = None if None in ses else math.sqrt(sum(x * x for x in ses)) / len(ses)
        found[name] = out
    return Phases(found, list(measured[0].phases.phases_missing))


def _log_se(p: dict) -> float | None:
    lo, hi = p.get("ci_lo"), p.get("ci_hi")
    if not lo or not hi or lo <= 0:
        return None
    return (math.log(hi) - math.log(lo)) / (2 * Z95)


def _proxy(r: RunStats, name: str) -> RunStats:
    """The phase as a row of its own, for noise.py's interval machinery."""
    p = r.phases.step_phases[name]
    timing = Timing(median_ms=p["median_ms"], median_ci_lo=p.get("ci_lo"), median_ci_hi=p.get("ci_hi"),
                    within_log_se=p.get("within_log_se") if r.processes else None)
    processes = [{"median_ms": m} for m in p.get("process_medians") or []] if r.processes else []
    return RunStats(r.run, r.mode, r.precision, timing=timing, processes=processes)


def phase_speedup(base: RunStats, r: RunStats, name: str,
                  noise: Noise) -> tuple[float, float | None, float | None] | None:
    """``base``'s phase time over ``r``'s (above 1: ``r`` is faster there) and its 95 % interval
    (None, None when it has none); None when the phase is too small in both to compare."""
    a, b = base.phases.step_phases.get(name), r.phases.step_phases.get(name)
    if not a or not b or a["median_ms"] < MIN_MS or b["median_ms"] < MIN_MS:
        return None
    if max(a.get("share") or 0.0, b.get("share") or 0.0) < MIN_SHARE:
        return None
    ratio = a["median_ms"] / b["median_ms"]
    interval = ratio_interval(_proxy(base, name), _proxy(r, name), ratio, noise)
    return (ratio, *(interval or (None, None)))


def phase_compare(r: RunStats, rows: dict[str, RunStats], noise: Noise) -> Phases:
    """``r``'s phases with each one's speedup against the eager run ``compare`` takes as the
    baseline (same precision, axis values and round): ``speedup``, ``speedup_lo``, ``speedup_hi``,
    and ``untold`` where that interval is too wide to tell (noise.untold)."""
    if not r.phases.step_phases or r.mode == "eager":
        return r.phases
    eager = [b for b in rows.values() if b.mode == "eager" and b.precision == r.precision
             and b.axes == r.axes and b.timing.median_ms]
    base = same_round(eager, r)
    if base is None or not base.phases.step_phases:
        return r.phases
    found = {}
    for name, p in r.phases.step_phases.items():
        ratio = phase_speedup(base, r, name, noise)
        found[name] = p if ratio is None else {
            **p, **dict(zip(("speedup", "speedup_lo", "speedup_hi"), ratio, strict=True)),
            "untold": untold_between(_proxy(base, name), _proxy(r, name), ratio[1], ratio[2], noise)}
    return replace(r.phases, step_phases=found)


def step_split(e: dict) -> dict[str, float | None]:
    """One step event's phases in ms (other: the step less the phases seen; None: not seen),
    or {} for a step without a split: steps.csv's columns."""
    ph = e.get("ph")
    if not ph:
        return {}
    out = {name: None if v is None else v / 1000.0 for name, v in zip(STEP_PHASES, ph, strict=False)}
    out[OTHER] = max(0.0, e["ms"] - sum(v for v in out.values() if v is not None))
    return out
