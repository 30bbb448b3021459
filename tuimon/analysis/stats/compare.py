"""Each row against the eager run of the same precision and axis values (and round): speedup
and its interval (noise.py: the spread between processes in it), break-even step and time, loss
parity over the steps both ran. The break-even is shared with ``verdict``."""

from __future__ import annotations

import math
from dataclasses import replace

from tuimon import fixes
from tuimon.analysis.stats.faults import faults_gap
from tuimon.analysis.stats.load import load_gap
from tuimon.analysis.stats.noise import Noise, ratio_interval, untold_between
from tuimon.analysis.stats.records import Comparison, Losses
from tuimon.analysis.stats.rows import RunStats
from tuimon.analysis.stats.warm import starts_breakeven


def same_round(rows: list[RunStats], r: RunStats) -> RunStats | None:
    """With --repeats, the row of ``r``'s own round (it ran beside it); else the first."""
    return next((b for b in rows if b.replicate == r.replicate), rows[0] if rows else None)


def pays_off(base_ms: float, base_overhead_s: float | None, ms: float,
             overhead_s: float | None) -> tuple[int | None, float | None, bool]:
    """(break-even step, the variant's wall time when it gets there, never): where a variant
    whose warm-up costs more than the baseline's has saved that much, one step ``base_ms - ms``
    at a time. "never" when it is not faster per step (and costs more up front)."""
    gain_ms = base_ms - ms
    extra_s = (overhead_s or 0.0) - (base_overhead_s or 0.0)
    if gain_ms <= 0:
        never = extra_s > 0 or gain_ms < 0
        return (None if never else 0), None, never
    n = max(0, math.ceil(extra_s * 1000.0 / gain_ms))
    # Wall time of the variant's run when it gets there: its warm-up, then steady steps.
    return n, (overhead_s or 0.0) + n * ms / 1000.0, False


def why_apart(base: RunStats, losses: dict[str, dict[int, float]]) -> str:
    """Why a run's first loss is not its eager baseline's: "unseeded" when the baseline's own
    processes start apart (each drew other weights or data), "random ops" when they start alike
    (the script is seeded: compiled code draws dropout's and other random ops' numbers otherwise
    than eager), "unknown" with one process (issue 33.11: a seeded script whose compiled dropout
    drew differently was called "e.g. an unseeded script")."""
    firsts = []
    for p in base.processes:
        mine = losses.get(p["run"]) or {}
        if mine:
            firsts.append(mine[min(mine)])
    if len(firsts) < 2:
        return "unknown"
    alike = max(firsts) - min(firsts) <= 1e-3 * max(1.0, abs(firsts[0]))
    return "random ops" if alike else "unseeded"


def loss_parity(r: RunStats, base: RunStats, losses: dict[str, dict[int, float]]) -> Losses:
    """``r``'s Losses against its baseline's over the steps both ran."""
    base_loss = losses[base.run]
    diffs = [abs(x - base_loss[i]) for i, x in losses[r.run].items() if i in base_loss]
    out = replace(r.loss, common_steps=len(diffs), max_loss_diff=max(diffs) if diffs else None)
    # Comparable losses start alike: the same seed and batches give the same first loss. A
    # script that does not seed itself (tuimon's --seed is best effort) starts elsewhere.
    first = min(losses[r.run], default=None)
    if first is None or first not in base_loss:
        return out
    a, b = losses[r.run][first], base_loss[first]
    comparable = abs(a - b) <= 1e-3 * max(1.0, abs(b))
    return replace(out, loss_comparable=comparable,
                   loss_apart=out.loss_apart if comparable else why_apart(base, losses))


def compare(r: RunStats, runs: dict[str, RunStats], losses: dict[str, dict[int, float]],
            noise: Noise, pinned: bool | None = None) -> RunStats:
    """``r`` against its baseline: its Losses, Comparison, each start's break-even, and a doubt
    (with its Load's flag) when their neighbours' load or their page faults differed."""
    eager = [b for b in runs.values() if b.mode == "eager" and b.precision == r.precision
             and b.axes == r.axes and b.timing.median_ms]
    if not eager and r.axes.get(fixes.AXIS, fixes.NONE) != fixes.NONE:
        # tuimon try races a fix on the compiled variant alone: its eager run is the one without
        unfixed = fixes.plain({**r.axes, fixes.AXIS: fixes.NONE})
        eager = [b for b in runs.values() if b.mode == "eager" and b.precision == r.precision
                 and fixes.plain(b.axes) == unfixed and b.timing.median_ms]
    base = same_round(eager, r)
    if base is None:
        return r
    loss = loss_parity(r, base, losses)
    if not r.timing.median_ms:
        return replace(r, loss=loss, compare=replace(r.compare, baseline=base.label))
    doubts, load = list(r.doubts), r.load
    if (what := load_gap(r, base)) is not None:  # their neighbours differed
        doubts.append(what)
        load = replace(load, load_differs=True)
    # --repeats: the spread between processes is in the interval already
    if not r.processes and (what := faults_gap(r, base, pinned)) is not None:
        doubts.append(what)
        load = replace(load, faults_differ=True)
    return replace(r, loss=loss, doubts=doubts, load=load, compare=speedup_against(r, base, noise),
                   # each start's break-even: cold and warm apart (warm.py)
                   warm=starts_breakeven(r, base, pays_off) if r is not base else r.warm)


def speedup_against(r: RunStats, base: RunStats, noise: Noise) -> Comparison:
    """``r``'s Comparison with its baseline's speedup, its interval and the break-even."""
    speedup = base.timing.median_ms / r.timing.median_ms
    out = replace(r.compare, baseline=base.label, speedup=speedup)
    if r is base:
        return out
    interval = ratio_interval(base, r, speedup, noise)
    if interval is not None:
        lo, hi = interval
        out = replace(out, speedup_lo=lo, speedup_hi=hi, within_noise=lo <= 1.0 <= hi,
                      untold=untold_between(base, r, lo, hi, noise))
    extra_s = (r.timing.overhead_s or 0.0) - (base.timing.overhead_s or 0.0)
    if out.speedup_lo is not None:
        gains = sorted(base.timing.median_ms - base.timing.median_ms / x for x in (out.speedup_lo,
                                                                                   out.speedup_hi))
        soon, late = (max(0, math.ceil(extra_s * 1000.0 / g)) if g > 0 else None for g in gains[::-1])
        out = replace(out, breakeven_lo=soon, breakeven_hi=late)
    steps, seconds, never = pays_off(base.timing.median_ms, base.timing.overhead_s, r.timing.median_ms,
                                     r.timing.overhead_s)
    return replace(out, breakeven_steps=steps, breakeven_s=seconds, breakeven_never=never)
