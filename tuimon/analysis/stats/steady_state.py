"""Which steps count: warm-up found by MSER-5, compiles and profiled steps kept apart, and the
step-time statistics of what is left (median, spread, interval, throughput, overhead)."""

from __future__ import annotations

import bisect
import math
import statistics
from dataclasses import replace

from tuimon.analysis.stats.intervals import lag1_autocorr, median_interval, percentile
from tuimon.analysis.stats.load import OWN_DROP_SHARE, own_load
from tuimon.analysis.stats.point import point
from tuimon.analysis.stats.rows import RunStats

HEAD = 2000  # warm-up is looked for among the first steps only (MSER cuts at most half of them)



def is_measured(step: dict) -> bool:
    return (step.get("phase") == "steady" and not step.get("compile_ms") and not step.get("profiled")
            and not step.get("gap"))


def step_stats(r: RunStats, run_steps: list[dict], total: int, measured_total: int,
               busy: list[tuple[float, float]] | None = None,
               own: list[tuple[float, float, float]] | None = None, quiet_only: bool = False) -> list[dict]:
    """``busy``: --quiet-only's periods of other processes' load; steps ending in them are kept
    out of the steady state and counted in ``busy_dropped``. ``own``: the periods (start, end,
    cores) in which the session's other runs loaded the machine beside this run's steps; steps
    ending in them are kept out (``own_dropped``) when they are few (stats/load.py) or with
    --quiet-only, and ``own_load`` says so either way. Returns the steady steps."""
    r.timing.steps = total
    if not run_steps:
        return []
    r.timing.gap_steps = sum(1 for s in run_steps if s.get("gap"))
    r.timing.first_step_ms = run_steps[0]["ms"]
    if r.compiled and r.compile.compile_s is None:
        total = sum(s.get("compile_ms", 0.0) for s in run_steps) / 1000.0
        r.compile.compile_s = round(total, 3) if total else None
    losses = [s.get("loss") for s in run_steps]
    r.loss = replace(r.loss, final_loss=next((x for x in reversed(losses) if x is not None), None))
    candidates = [s for s in run_steps if is_measured(s)]  # in step order
    if busy:
        in_busy = _finder(busy)
        quiet = [s for s in candidates if in_busy(s["t"]) is None]
        r.load.busy_dropped = len(candidates) - len(quiet)
        measured_total -= r.load.busy_dropped
        candidates = quiet
    if own:
        in_own = _finder(own)
        met = [(s, in_own(s["t"])) for s in candidates]
        met = [(s, k) for s, k in met if k is not None]
        if met:
            dropped = quiet_only or len(met) <= OWN_DROP_SHARE * len(candidates)
            cores = statistics.fmean(own[k][2] for _, k in met)
            r.load.own_load = own_load(len(met), cores, dropped)
            if dropped:
                out = {id(s) for s, _ in met}
                candidates = [s for s in candidates if id(s) not in out]
                r.load.own_dropped = len(met)
                measured_total -= r.load.own_dropped
    cut = mser5([s["ms"] for s in candidates[:HEAD]]) if r.timing.warmup_auto else 0
    steady = candidates[cut:]
    r.timing.measured = measured_total - cut
    r.timing.warmup_steps = r.timing.steps - r.timing.measured
    if not steady:
        return []
    r.timing.steady_from = steady[0]["i"]
    in_order = [s["ms"] for s in steady]
    measured = sorted(in_order)
    r.timing.median_ms = statistics.median(measured)
    r.timing.p10_ms = percentile(measured, 0.10)
    r.timing.p90_ms = percentile(measured, 0.90)
    r.timing.autocorr = lag1_autocorr(in_order)
    r.timing.median_ci_lo, r.timing.median_ci_hi = median_interval(measured, r.timing.autocorr)
    r.timing.mean_data_ms = statistics.fmean(s.get("data_ms", 0.0) for s in steady)
    samples = statistics.median(s.get("n", 0) for s in steady)
    if not samples:  # a script whose batches tuimon cannot see: steps per second
        samples, r.timing.throughput_unit = 1, "steps"
    r.timing.throughput = samples / (r.timing.median_ms / 1000.0) if r.timing.median_ms > 0 else None
    # A profiled step is slow because of the profiler, not warm-up (unless it compiled too).
    kept_apart = [s["ms"] for s in run_steps if not is_measured(s) and not s.get("gap")
                  and (s.get("compile_ms") or not s.get("profiled"))]
    kept_apart += [s["ms"] for s in candidates[:cut]]
    # A gap in warm-up (a validation pass before the first step: Lightning's sanity check) is
    # not training's time, but training's compile in it is (a validation pass's is not in it).
    gap_compile_ms = sum(s.get("compile_ms", 0.0) for s in run_steps
                         if s.get("gap") and s["i"] < r.timing.steady_from)
    r.timing.overhead_s = max(0.0, (sum(kept_apart) - len(kept_apart) * r.timing.median_ms + gap_compile_ms)
                              / 1000.0)
    # A compile in a script's gap (its validation pass: eval mode, no grad) is a one-time cost
    # of that pass, not training steps whose shapes or guards keep changing.
    late = [s for s in run_steps if s.get("compile_ms") and s["i"] > r.timing.steady_from
            and not s.get("gap")]
    if late:
        r.distrust(point("recompiled", steps=len(late), first=late[0]["i"]))
    return steady


def _finder(periods: list[tuple]):
    """t -> the index of the period (start, end] holding it, or None; periods in time order, not
    overlapping: one bisection a step."""
    ends = [p[1] for p in periods]

    def find(t: float) -> int | None:
        k = bisect.bisect_left(ends, t)
        return k if k < len(periods) and periods[k][0] < t else None

    return find


def mser5(series: list[float]) -> int:
    """Warm-up length by MSER-5 (White, 1997): cut where the remaining batch means (of 5 steps)
    have the smallest squared standard error; at most half the series. O(n)."""
    b = 5
    k = len(series) // b
    if k < 4:
        return 0
    means = [statistics.fmean(series[i * b:(i + 1) * b]) for i in range(k)]
    s1 = s2 = 0.0
    suffix = []
    for x in reversed(means):
        s1 += x
        s2 += x * x
        suffix.append((s1, s2))
    suffix.reverse()
    best_d, best = 0, math.inf
    for d in range(k // 2 + 1):
        n = k - d
        t1, t2 = suffix[d]
        score = max(0.0, t2 - t1 * t1 / n) / (n * n)
        if score < best:
            best_d, best = d, score
    if best_d >= k // 2 - 1:
        return 0  # the minimum sits at the limit: no settling, just a noisier start (nonstationary)
    return best_d * b


def profile_stats(r: RunStats, run_steps: list[dict]) -> None:
    profiled: dict[int, list[float]] = {}
    for s in run_steps:
        if s.get("profiled"):
            profiled.setdefault(s["profiled"], []).append(s["ms"])
    r.timing.profiled_steps = sum(len(v) for v in profiled.values())
    r.timing.warmup_steps -= r.timing.profiled_steps
    for p in r.profiles:
        times = profiled.get(p.get("capture"))
        p["recorded_median_ms"] = statistics.median(times) if times else None


def steady_window(run_steps: list[dict]) -> tuple[float, float] | None:
    """Wall-clock span of the steady state: first measured step's start to the last step's end."""
    measured = [s for s in run_steps if is_measured(s)]
    if not measured:
        return None
    return measured[0]["t"] - measured[0]["ms"] / 1000.0, run_steps[-1]["t"]
