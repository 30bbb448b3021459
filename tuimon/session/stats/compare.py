"""Each row against the eager run of the same precision (and round): speedup and its interval,
break-even step and time, loss parity over the steps both ran."""

from __future__ import annotations

import math

from tuimon.session.stats.intervals import Z95, log_se, t95, welch_df
from tuimon.session.stats.load import compare_load
from tuimon.session.stats.replicates import measured_processes
from tuimon.session.stats.rows import RunStats


def compare(r: RunStats, runs: dict[str, RunStats], losses: dict[str, dict[int, float]]) -> None:
    eager = [b for b in runs.values() if b.mode == "eager" and b.precision == r.precision and b.median_ms]
    # With --repeats, the eager process of the same round: it ran beside this one.
    base = next((b for b in eager if b.replicate == r.replicate), eager[0] if eager else None)
    if base is None:
        return
    r.baseline = base.label
    base_loss = losses[base.run]
    diffs = [abs(x - base_loss[i]) for i, x in losses[r.run].items() if i in base_loss]
    r.common_steps = len(diffs)
    r.max_loss_diff = max(diffs) if diffs else None
    # Comparable losses start alike: the same seed and batches give the same first loss. A
    # script that does not seed itself (tuimon's --seed is best effort) starts elsewhere.
    first = min(losses[r.run], default=None)
    if first is not None and first in base_loss:
        a, b = losses[r.run][first], base_loss[first]
        r.loss_comparable = abs(a - b) <= 1e-3 * max(1.0, abs(b))
    if not r.median_ms:
        return
    compare_load(r, base)
    r.speedup = base.median_ms / r.median_ms
    if r is base:
        return
    se_a, se_b = log_se(base), log_se(r)
    if se_a is not None and se_b is not None:
        se = math.hypot(se_a, se_b)  # two independent samples: log-ratio variances add
        crit = Z95
        if r.processes and base.processes:  # combined rows: Student's t, Welch's degrees of freedom
            crit = t95(welch_df(se_a, measured_processes(base) - 1, se_b, measured_processes(r) - 1))
        r.speedup_lo = r.speedup * math.exp(-crit * se)
        r.speedup_hi = r.speedup * math.exp(crit * se)
        r.within_noise = r.speedup_lo <= 1.0 <= r.speedup_hi
    gain_ms = base.median_ms - r.median_ms
    extra_s = (r.overhead_s or 0.0) - (base.overhead_s or 0.0)
    if r.speedup_lo is not None:
        gains = sorted(base.median_ms - base.median_ms / x for x in (r.speedup_lo, r.speedup_hi))
        r.breakeven_lo = max(0, math.ceil(extra_s * 1000.0 / gains[1])) if gains[1] > 0 else None
        r.breakeven_hi = max(0, math.ceil(extra_s * 1000.0 / gains[0])) if gains[0] > 0 else None
    if gain_ms <= 0:
        r.breakeven_never = extra_s > 0 or gain_ms < 0
        if not r.breakeven_never:
            r.breakeven_steps = 0
        return
    n = max(0, math.ceil(extra_s * 1000.0 / gain_ms))
    r.breakeven_steps = n
    # Wall time of the variant's run when it gets there: its warm-up, then steady steps.
    r.breakeven_s = (r.overhead_s or 0.0) + n * r.median_ms / 1000.0
