"""Order statistics and 95 % intervals: percentiles, the median's interval widened for correlated
steps, Student's t quantiles and Welch's degrees of freedom. Plain numbers in, numbers out."""

from __future__ import annotations

import math
import statistics

from tuimon.analysis.stats.rows import RunStats

Z95 = 1.959964



def percentile(sorted_values: list[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default), on a sorted list."""
    if not sorted_values:
        raise ValueError("no values")
    pos = (len(sorted_values) - 1) * q
    lo, hi = math.floor(pos), math.ceil(pos)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def lag1_autocorr(xs: list[float]) -> float:
    if len(xs) < 3:
        return 0.0
    m = statistics.fmean(xs)
    den = sum((x - m) ** 2 for x in xs)
    if den == 0:
        return 0.0
    return sum((a - m) * (b - m) for a, b in zip(xs, xs[1:], strict=False)) / den


def median_interval(sorted_ms: list[float], rho: float) -> tuple[float, float]:
    """Distribution-free 95 % interval of the median from order statistics, widened for
    correlated neighbours: the effective sample size is n(1-rho)/(1+rho) (the AR(1) rule)."""
    n = len(sorted_ms)
    rho = min(max(rho, 0.0), 0.99)
    n_eff = max(1.0, n * (1 - rho) / (1 + rho))
    half = Z95 * n / (2 * math.sqrt(n_eff))  # in ranks
    lo = max(0, math.floor(n / 2 - half))
    hi = min(n - 1, math.ceil(n / 2 + half) - 1)
    return sorted_ms[lo], sorted_ms[max(lo, hi)]


def log_se(r: RunStats) -> float | None:
    if r.processes:
        return r.timing.log_se
    if not r.timing.median_ci_lo or not r.timing.median_ci_hi or r.timing.median_ci_lo <= 0:
        return None
    return (math.log(r.timing.median_ci_hi) - math.log(r.timing.median_ci_lo)) / (2 * Z95)


# Two-sided 95 % quantiles of Student's t by degrees of freedom (1..30); Z95 beyond.
T95 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
       2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
       2.052, 2.048, 2.045, 2.042)


def t95(df: float) -> float:
    """The 97.5 % quantile of Student's t; a fractional df rounds down (wider, the safe side).
    Past the table, the first Cornish-Fisher term (2.021 at 40, 2.000 at 60: within 0.002)."""
    k = max(int(df), 1)
    return T95[k - 1] if k <= len(T95) else Z95 + (Z95 ** 3 + Z95) / (4 * k)


def welch_df(se_a: float, df_a: int, se_b: float, df_b: int) -> float:
    """Welch–Satterthwaite degrees of freedom of a difference of two means."""
    va, vb = se_a ** 2, se_b ** 2
    den = (va * va / df_a if df_a > 0 else 0.0) + (vb * vb / df_b if df_b > 0 else 0.0)
    return (va + vb) ** 2 / den if den > 0 else float(max(df_a, df_b, 1))
