"""Process-to-process noise: how far apart fresh processes of the same work land, which no interval
from one process's steps can see (on this project's VM the same command runs at one of two speeds,
tens of percent apart; bench/RESULTS.md). Measured by running each variant in several processes
(``--repeats K``, 3 by default when tuimon sets a run's length) and *pooled* over every variant of
the session (or of the sessions ``tuimon compare`` reads) on the log scale: the spread is the
machine's and the process's luck, not the model's, so one estimate with the degrees of freedom of
all variants together is far tighter than any variant's own (two processes give one degree of
freedom each; two variants of three, four).

With one process a variant nothing measures it: an assumed spread (``FLOOR_SD``) stands in, with
the normal quantile, and the summary says so. Either way a row's interval is never narrower than
its processes' own step noise allows.

For planning: the smallest change the processes can tell from none (at 95 % confidence, found 80 %
of the time), and how many processes a variant would tell a given change.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

from tuimon.analysis.stats.intervals import Z95, log_se, t95
from tuimon.analysis.stats.rows import RunStats

# σ of a process's log median assumed when a session measured none (one process a variant): the
# spread measured between tiny_mlp / autoencoder processes on this project's 2-core VM
# (bench/RESULTS.md, "A/A pairs"); a quieter machine is better served by --repeats, which measures.
FLOOR_SD = 0.10
Z80 = 0.841621
# One-sided 80 % quantiles of Student's t by degrees of freedom (1..30); Z80 beyond.
T80 = (1.376, 1.061, 0.978, 0.941, 0.920, 0.906, 0.896, 0.889, 0.883, 0.879, 0.876, 0.873, 0.870,
       0.868, 0.866, 0.865, 0.863, 0.862, 0.861, 0.860, 0.859, 0.858, 0.858, 0.857, 0.856, 0.856,
       0.855, 0.855, 0.854, 0.854)
MAX_PROCESSES = 20  # --repeats' limit: past it, "more than 20 processes"


@dataclass
class Noise:
    sd: float  # σ of one process's log median step
    df: int  # degrees of freedom of ``sd``; 0: not measured, FLOOR_SD assumed
    variants: int = 0  # variants with two processes or more that it pools
    processes: int = 0  # their processes

    @property
    def measured(self) -> bool:
        return self.df > 0

    @property
    def crit(self) -> float:
        """The two-sided 95 % quantile that goes with ``sd``: Student's t, or normal if assumed."""
        return t95(self.df) if self.df else Z95

    @property
    def pct(self) -> float:
        """The spread as a share of a median: one σ either way, in percent."""
        return (math.exp(self.sd) - 1.0) * 100.0

    def to_dict(self) -> dict:
        return {"sd": round(self.sd, 6), "pct": round(self.pct, 3), "df": self.df,
                "measured": self.measured, "variants": self.variants, "processes": self.processes}


ASSUMED = Noise(FLOOR_SD, 0)


def pooled(rows: list[RunStats]) -> Noise:
    """The spread between processes over every combined row (``--repeats``) given: the pooled
    variance of their processes' log medians about each row's own mean. ``ASSUMED`` when no row
    has two measured processes."""
    ss, df, variants, processes = 0.0, 0, 0, 0
    for r in rows:
        logs = [math.log(p["median_ms"]) for p in r.processes if p.get("median_ms")]
        if len(logs) < 2:
            continue
        centre = statistics.fmean(logs)
        ss += sum((x - centre) ** 2 for x in logs)
        df += len(logs) - 1
        variants += 1
        processes += len(logs)
    if df == 0:
        return ASSUMED
    return Noise(math.sqrt(ss / df), df, variants, processes)


def measured_processes(r: RunStats) -> int:
    return sum(1 for p in r.processes if p["median_ms"])


def row_variance(r: RunStats, noise: Noise) -> float | None:
    """Variance of a row's log median as an estimate of its variant's level: a combined row's
    K processes give σ²/K; one process, its own step noise plus σ² (its process's luck). Never
    below what the processes' own intervals allow."""
    if r.processes:
        k = measured_processes(r)
        within = r.within_log_se
        if not k or within is None:
            return None
        return max(noise.sd ** 2 / k, within ** 2)
    se = log_se(r)
    return None if se is None else se * se + noise.sd ** 2


def ratio_interval(base: RunStats, r: RunStats, ratio: float, noise: Noise) -> tuple[float, float] | None:
    """95 % interval of ``ratio`` (a ratio of the two rows' medians): the rows' variances add,
    each with the processes' spread in it."""
    va, vb = row_variance(base, noise), row_variance(r, noise)
    if va is None or vb is None:
        return None
    half = noise.crit * math.sqrt(va + vb)
    return ratio * math.exp(-half), ratio * math.exp(half)


def t80(df: int) -> float:
    k = max(int(df), 1)
    return T80[k - 1] if k <= len(T80) else Z80


def detectable_pct(noise: Noise, k_a: int, k_b: int) -> float:
    """The smallest change of a median (in %) that K_a against K_b processes tell from none at 95 %
    confidence, 80 % of the time: (t.975 + t.80) × σ × √(1/K_a + 1/K_b) on the log scale."""
    power = t80(noise.df) if noise.df else Z80
    return (math.exp((noise.crit + power) * noise.sd * math.sqrt(1 / k_a + 1 / k_b)) - 1.0) * 100.0


def processes_for(noise: Noise, pct: float, variants: int = 2) -> int | None:
    """Processes a variant (the same on both sides) that tell a ``pct`` % change 80 % of the time,
    with this spread pooled over ``variants`` variants; None past MAX_PROCESSES."""
    for k in range(2, MAX_PROCESSES + 1):
        after = Noise(noise.sd, max(noise.df, variants * (k - 1)))
        if detectable_pct(after, k, k) <= pct:
            return k
    return None


def session_plan(rows: list[RunStats], noise: Noise, pct: float = 10.0) -> dict:
    """What a session's processes can tell: the least speedup (%) it tells from none between two
    of its variants, and the processes a variant that would tell ``pct`` %."""
    k = max([measured_processes(r) for r in rows if r.processes] + [1])  # none measured yet: 1
    variants = max(2, sum(1 for r in rows if r.processes) or len(rows))
    return {"processes": k, "detectable_pct": round(detectable_pct(noise, k, k), 2), "target_pct": pct,
            "processes_for_target": processes_for(noise, pct, variants)}
