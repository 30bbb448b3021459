"""Which steps count: warm-up found by MSER-5, compiles and profiled steps kept apart, and the
step-time statistics of what is left (median, spread, interval, throughput, overhead)."""

from __future__ import annotations

import bisect
import math
import statistics
from dataclasses import replace

from tuimon.analysis.stats.cycles import CYCLES, cycle, means
from tuimon.analysis.stats.intervals import lag1_autocorr, median_interval, percentile
from tuimon.analysis.stats.load import OWN_DROP_SHARE, own_load
from tuimon.analysis.stats.point import Point, point
from tuimon.analysis.stats.records import Load, Timing
from tuimon.analysis.stats.rows import RunStats

HEAD = 2000  # warm-up is looked for among the first steps only (MSER cuts at most half of them)



def is_measured(step: dict) -> bool:
    # mem: a step whose memory per phase was read (CUDA), slower by those reads
    return (step.get("phase") == "steady" and not step.get("compile_ms") and not step.get("profiled")
            and not step.get("gap") and not step.get("mem"))


def step_stats(r: RunStats, run_steps: list[dict], total: int, measured_total: int,
               busy: list[tuple[float, float]] | None = None,
               own: list[tuple[float, float, float]] | None = None,
               quiet_only: bool = False, cycle_of: int | None = None) -> tuple[Timing, Load, list[dict]]:
    """``r``'s Timing and Load (the steps its load kept out), and its steady steps. ``busy``:
    --quiet-only's periods of other processes' load; steps ending in them are kept out of the
    steady state and counted in ``busy_dropped``. ``own``: the periods (start, end, cores) in which
    the session's other runs loaded the machine beside this run's steps; steps ending in them are
    kept out (``own_dropped``) when they are few (stats/load.py) or with --quiet-only, and
    ``own_load`` says so either way. ``cycle_of``: the cycle another row of the session found,
    so that a comparison weighs cycle means against cycle means, never against a median."""
    t, load = {"steps": total}, {}  # the fields found, for its Timing and its Load
    if not run_steps:
        return replace(r.timing, **t), r.load, []
    t["gap_steps"] = sum(1 for s in run_steps if s.get("gap"))
    t["first_step_ms"] = run_steps[0]["ms"]
    candidates = [s for s in run_steps if is_measured(s)]  # in step order
    if busy:
        in_busy = _finder(busy)
        quiet = [s for s in candidates if in_busy(s["t"]) is None]
        load["busy_dropped"] = len(candidates) - len(quiet)
        measured_total -= load["busy_dropped"]
        candidates = quiet
    if own:
        in_own = _finder(own)
        met = [(s, in_own(s["t"])) for s in candidates]
        met = [(s, k) for s, k in met if k is not None]
        if met:
            dropped = quiet_only or len(met) <= OWN_DROP_SHARE * len(candidates)
            cores = statistics.fmean(own[k][2] for _, k in met)
            load["own_load"] = own_load(len(met), cores, dropped)
            if dropped:
                out = {id(s) for s, _ in met}
                candidates = [s for s in candidates if id(s) not in out]
                load["own_dropped"] = len(met)
                measured_total -= load["own_dropped"]
    cut = mser5([s["ms"] for s in candidates[:HEAD]]) if r.timing.warmup_auto else 0
    steady = candidates[cut:]
    t["measured"] = measured_total - cut
    t["warmup_steps"] = total - t["measured"]
    if not steady:
        return replace(r.timing, **t), replace(r.load, **load), []
    in_order = [s["ms"] for s in steady]
    # uneven steps in cycles: their means (cycles.py); another row's cycle when one found it
    t["cycle"] = k = (cycle_of if cycle_of and len(in_order) >= CYCLES * cycle_of
                      else cycle(in_order, r.anatomy.cycle))
    if k > 1:
        in_order = means(in_order, k)
    measured = sorted(in_order)
    median = statistics.median(measured)
    autocorr = lag1_autocorr(in_order)
    lo, hi = median_interval(measured, autocorr)
    samples = statistics.median(s.get("n", 0) for s in steady)
    if not samples:  # a script whose batches tuimon cannot see: steps per second
        samples, t["throughput_unit"] = 1, "steps"
    # A profiled step is slow because of the profiler, not warm-up (unless it compiled too).
    kept_apart = [s["ms"] for s in run_steps if not is_measured(s) and not s.get("gap")
                  and (s.get("compile_ms") or not s.get("profiled"))]
    kept_apart += [s["ms"] for s in candidates[:cut]]
    # A gap in warm-up (a validation pass before the first step: Lightning's sanity check) is
    # not training's time, but training's compile in it is (a validation pass's is not in it).
    gap_compile_ms = sum(s.get("compile_ms", 0.0) for s in run_steps
                         if s.get("gap") and s["i"] < steady[0]["i"])
    timing = replace(r.timing, **t, steady_from=steady[0]["i"], median_ms=median,
                     p10_ms=percentile(measured, 0.10), p90_ms=percentile(measured, 0.90), autocorr=autocorr,
                     median_ci_lo=lo, median_ci_hi=hi,
                     mean_data_ms=statistics.fmean(s.get("data_ms", 0.0) for s in steady),
                     throughput=samples / (median / 1000.0) if median > 0 else None,
                     overhead_s=max(0.0, (sum(kept_apart) - len(kept_apart) * median + gap_compile_ms)
                                    / 1000.0))
    return timing, replace(r.load, **load), steady


def step_compile_s(run_steps: list[dict]) -> float | None:
    """The compile time the steps' own ``compile_ms`` add up to (a compiled run whose runner did
    not say it: finished carries it)."""
    total = sum(s.get("compile_ms", 0.0) for s in run_steps) / 1000.0
    return round(total, 3) if total else None


def final_loss(run_steps: list[dict]) -> float | None:
    return next((x for x in reversed([s.get("loss") for s in run_steps]) if x is not None), None)


NEW_TRAINING = 5  # steps after a new training began (another model) whose compiles are its warm-up


def late_compiles(run_steps: list[dict], steady_from: int | None, starts: list[int] = ()) -> list[Point]:
    """A doubt when steps compiled after the steady state began: its shapes or guards keep
    changing. A compile in a script's gap (its validation pass: eval mode, no grad) is a one-time
    cost of that pass, not training's; one in the first steps of a new training (``starts``: the
    anatomy's, a second model's) is that model's first compile."""
    if steady_from is None:
        return []
    late = [s for s in run_steps if s.get("compile_ms") and s["i"] > steady_from and not s.get("gap")
            and not any(0 <= s["i"] - k < NEW_TRAINING for k in starts)]
    return [point("recompiled", steps=len(late), first=late[0]["i"])] if late else []


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


def profile_stats(timing: Timing, profiles: list[dict], run_steps: list[dict]) -> tuple[Timing, list[dict]]:
    """The steps the profiler recorded taken out of the warm-up (``profiled_steps``), and each
    capture with ``recorded_median_ms``: the median step time of the steps it recorded."""
    profiled: dict[int, list[float]] = {}
    for s in run_steps:
        if s.get("profiled"):
            profiled.setdefault(s["profiled"], []).append(s["ms"])
    n = sum(len(v) for v in profiled.values())
    out = []
    for p in profiles:
        times = profiled.get(p.get("capture"))
        out.append({**p, "recorded_median_ms": statistics.median(times) if times else None})
    return replace(timing, profiled_steps=n, warmup_steps=timing.warmup_steps - n), out


def steady_window(run_steps: list[dict]) -> tuple[float, float] | None:
    """Wall-clock span of the steady state: first measured step's start to the last step's end."""
    measured = [s for s in run_steps if is_measured(s)]
    if not measured:
        return None
    return measured[0]["t"] - measured[0]["ms"] / 1000.0, run_steps[-1]["t"]
