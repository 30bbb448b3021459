"""Process-to-process noise: how far apart fresh processes of the same work land, which no interval
from one process's steps can see. Measured over ``--repeats K`` processes a variant and pooled
over every variant on the log scale (the spread is the machine's, not the model's, so pooling
buys degrees of freedom); within a session's rounds, paired (``within_rounds``); with one
process, an assumed spread (``FLOOR_SD``). Plus, for planning, the smallest change the processes
can tell from none and how many processes a change needs. Why and how:
docs/measuring.md#repeats-the-spread-between-processes."""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, replace

from tuimon.analysis.stats.intervals import Z95, log_se, t95
from tuimon.analysis.stats.point import Point, point
from tuimon.analysis.stats.rows import RunStats
from tuimon.analysis.stats.sequential import Design

# σ of a process's log median assumed when a session measured none (one process a variant): the
# spread measured between tiny_mlp / autoencoder processes on this project's 2-core VM
# (bench/RESULTS.md, "A/A pairs"); a quieter machine is better served by --repeats, which measures.
FLOOR_SD = 0.10
# σ of a whole session's log level beyond its processes' spread, between sessions (``tuimon
# compare``; ``--session-spread`` sets another): the machine's state when the session ran, shared
# by all its processes and variants, so it cancels inside a session and not across two. 5 %: on
# this VM it took the A/A session pairs' false "beyond noise" calls from 5 of 20 to none and cost
# no slowdown seen (bench/RESULTS.md, "A/B and A/A"); a steady machine can pass 0.
SESSION_SD = math.log(1.05)
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
    # Within a round (one session's variants, round by round): σ of a process's log median once
    # its round's shared level is out, and its degrees of freedom; 0: not measured.
    round_sd: float = 0.0
    round_df: int = 0
    # Between sessions (compare only): σ of a session's own level, assumed (SESSION_SD).
    session_sd: float = 0.0
    # --until-known (stats/sequential.py): the session's group-sequential design and the rounds its
    # intervals rest on; each interval then takes the quantile of the look after that many rounds,
    # so that the session may stop on it (a repeated confidence interval). None: a fixed length.
    design: Design | None = None
    rounds: int = 0

    @property
    def measured(self) -> bool:
        return self.df > 0

    @property
    def crit(self) -> float:
        """The two-sided 95 % quantile that goes with ``sd``: Student's t, or normal if assumed;
        under --until-known, the quantile of the session's look."""
        return self._look(self.df) or (t95(self.df) if self.df else Z95)

    @property
    def round_crit(self) -> float:
        """The quantile that goes with ``round_sd`` (the paired speedups)."""
        return self._look(self.round_df) or t95(self.round_df)

    def _look(self, df: int) -> float | None:
        if self.design is None:
            return None
        return self.design.crit(self.rounds, df if df else math.inf)

    @property
    def pct(self) -> float:
        """The spread as a share of a median: one σ either way, in percent."""
        return as_pct(self.sd)

    @property
    def round_pct(self) -> float:
        return as_pct(self.round_sd)

    @property
    def session_pct(self) -> float:
        return as_pct(self.session_sd)

    def to_dict(self) -> dict:
        return {"sd": round(self.sd, 6), "pct": round(self.pct, 3), "df": self.df,
                "measured": self.measured, "variants": self.variants, "processes": self.processes,
                "round_sd": round(self.round_sd, 6), "round_pct": round(self.round_pct, 3),
                "round_df": self.round_df, "session_sd": round(self.session_sd, 6),
                "session_pct": round(self.session_pct, 3), "rounds": self.rounds,
                "sequential": self.design.to_dict() if self.design is not None else None}


ASSUMED = Noise(FLOOR_SD, 0)


def as_pct(sd: float) -> float:
    """A σ on the log scale as a share of a median, in percent (one σ either way)."""
    return math.expm1(sd) * 100.0


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


def _by_round(r: RunStats) -> dict[int, float]:
    """A combined row's processes' log medians by round (processes with a median)."""
    return {p["round"]: math.log(p["median_ms"]) for p in r.processes
            if p.get("median_ms") and p.get("round") is not None}


def within_rounds(rows: list[RunStats], noise: Noise) -> Noise:
    """``noise`` with the spread within a round, from one session's combined rows: over the rounds
    every row has, log median = variant + round + residual; the residuals' pooled variance with
    (V - 1)(K - 1) degrees of freedom. Unchanged when fewer than two rows share two rounds."""
    tables = [t for t in (_by_round(r) for r in rows) if len(t) >= 2]
    if len(tables) < 2:
        return noise
    common = sorted(set.intersection(*(set(t) for t in tables)))
    if len(common) < 2:
        return noise
    grid = [[t[k] for k in common] for t in tables]
    v, k = len(grid), len(common)
    grand = statistics.fmean(x for row in grid for x in row)
    row_mean = [statistics.fmean(row) for row in grid]
    round_mean = [statistics.fmean(row[j] for row in grid) for j in range(k)]
    ss = sum((grid[i][j] - row_mean[i] - round_mean[j] + grand) ** 2 for i in range(v) for j in range(k))
    df = (v - 1) * (k - 1)
    return replace(noise, round_sd=math.sqrt(ss / df), round_df=df, rounds=k)


def _paired(base: RunStats, r: RunStats, noise: Noise) -> tuple[float, float] | None:
    """(variance of the log ratio, its quantile) when the two rows ran the same rounds of a
    session whose within-round spread is measured: the ratio of their geometric means is the
    mean of the per-round ratios, whose variance is 2 σ²/K. Never below what the processes' own
    step noise allows."""
    if not noise.round_df or not base.processes or not r.processes:
        return None
    a, b = _by_round(base), _by_round(r)
    if len(a) < 2 or set(a) != set(b) or len(a) != len(base.processes) or len(b) != len(r.processes):
        return None
    within = [x.timing.within_log_se for x in (base, r)]
    floor = sum(w * w for w in within) if None not in within else 0.0
    return max(2 * noise.round_sd ** 2 / len(a), floor), noise.round_crit


def measured_processes(r: RunStats) -> int:
    return sum(1 for p in r.processes if p["median_ms"])


def row_variance(r: RunStats, noise: Noise) -> float | None:
    """Variance of a row's log median as an estimate of its variant's level: a combined row's
    K processes give σ²/K; one process, its own step noise plus σ² (its process's luck). Never
    below what the processes' own intervals allow."""
    if r.processes:
        k = measured_processes(r)
        within = r.timing.within_log_se
        if not k or within is None:
            return None
        return max(noise.sd ** 2 / k, within ** 2)
    se = log_se(r)
    return None if se is None else se * se + noise.sd ** 2


def ratio_interval(base: RunStats, r: RunStats, ratio: float, noise: Noise) -> tuple[float, float] | None:
    """95 % interval of ``ratio`` (a ratio of the two rows' medians): the rows' variances add,
    each with the processes' spread in it; two rows of one session's rounds: the spread within a
    round, paired (``_paired``)."""
    paired = _paired(base, r, noise)
    if paired is not None:
        half = paired[1] * math.sqrt(paired[0])
        return ratio * math.exp(-half), ratio * math.exp(half)
    va, vb = row_variance(base, noise), row_variance(r, noise)
    if va is None or vb is None:
        return None
    half = noise.crit * math.sqrt(va + vb + 2 * noise.session_sd ** 2)  # two sessions' own levels
    return ratio * math.exp(-half), ratio * math.exp(half)


def ratio_basis(base: RunStats, r: RunStats, noise: Noise) -> Point:
    """What ``ratio_interval`` rests on, for the note beside a verdict (issue 33.9: the note said
    "±4.1 % within a round" while the interval beside the verdict came from the processes' own
    step noise, wider by far): ``own_noise_rounds`` (the processes' own step noise, more than
    their rounds differ), ``paired`` (the spread within a round, ``pct``), ``assumed`` (one
    process a variant, ``pct``), ``own_noise`` (more than the processes differ), ``unpaired``
    (the spread between processes, ``pct``)."""
    if _paired(base, r, noise) is not None:
        within = [x.timing.within_log_se for x in (base, r)]
        floor = sum(w * w for w in within) if None not in within else 0.0
        if floor > 2 * noise.round_sd ** 2 / len(_by_round(base)):
            return point("own_noise_rounds")
        return point("paired", pct=noise.round_pct)
    if not noise.measured:
        return point("assumed", pct=noise.pct)
    va, vb = row_variance(base, noise), row_variance(r, noise)
    floors = [x.timing.within_log_se for x in (base, r)]
    if None not in (va, vb) and None not in floors and (
            va + vb <= sum(f * f for f in floors) * 1.0001):
        return point("own_noise")
    return point("unpaired", pct=noise.pct)


# Too wide to tell (issue 40.4: "32.56× faster (95 % CI 3.95× slower to 4187.29× faster)", "0.01×
# (CI 0.00–4.40)", "tells a speedup of ±148824 % or more" on a busy machine). A 95 % interval whose
# ends lie more than a factor UNTOLD either side of its estimate (hi / lo above UNTOLD², 9) holds
# every effect torch.compile has on a step with room to spare (its speedups are mostly 1.3–2×, its
# slowdowns, a graph break or a recompile, rarely past 2×): its figure tells nothing the reader
# did not know before measuring, and a view says "cannot tell" and why in its place
# (docs/measuring.md#too-wide-to-tell). A narrower one still bounds the answer (0.46–2.34: not 2.2×
# either way, a busy VM's 3 rounds) and keeps its figure beside the verdict's "cannot tell" (WIDE,
# 2: an interval across 1 that holds a speedup and a slowdown alike). The same bound for a plan: a
# session whose least told change is above ×UNTOLD (200 %) tells none of compile's effects.
UNTOLD = 3.0


def untold(lo: float | None, hi: float | None, rests: str | None = None) -> Point | None:
    """``untold`` with its ``bound``, what the interval ``rests`` on (``ratio_basis``'s code) and
    its ``side`` of 1 (above, below, or None: across) when the interval is too wide to tell; None
    when it is not, or there is none."""
    if lo is None or hi is None:
        return None
    if lo > 0 and hi / lo <= UNTOLD * UNTOLD:
        return None
    return point("untold", bound=UNTOLD, rests=rests,
                 side="above" if lo > 1.0 else "below" if hi < 1.0 else None)


def untold_between(base: RunStats, r: RunStats, lo: float | None, hi: float | None,
                   noise: Noise) -> Point | None:
    """``untold`` of ``ratio_interval``'s interval between two rows, with what it rests on."""
    if untold(lo, hi) is None:
        return None
    return untold(lo, hi, ratio_basis(base, r, noise).code)


def untold_change(pct: float | None) -> bool:
    """A least told change (``detectable_pct``) beyond ×UNTOLD: the processes tell none of
    compile's usual effects."""
    return pct is not None and 1.0 + pct / 100.0 > UNTOLD


def t80(df: int) -> float:
    k = max(int(df), 1)
    return T80[k - 1] if k <= len(T80) else Z80


def detectable_pct(noise: Noise, k_a: int, k_b: int) -> float:
    """The smallest change of a median (in %) that K_a against K_b processes tell from none at 95 %
    confidence, 80 % of the time: (t.975 + t.80) × σ × √(1/K_a + 1/K_b) on the log scale."""
    if noise.round_df and k_a == k_b:  # one session's variants, round by round: paired
        sd, crit, power = noise.round_sd, noise.round_crit, t80(noise.round_df)
    else:
        sd, crit, power = noise.sd, noise.crit, t80(noise.df) if noise.df else Z80
    var = sd * sd * (1 / k_a + 1 / k_b) + 2 * noise.session_sd ** 2  # two sessions: their own levels
    return (math.exp((crit + power) * math.sqrt(var)) - 1.0) * 100.0


def processes_for(noise: Noise, pct: float, variants: int = 2) -> int | None:
    """Processes a variant (the same on both sides) that tell a ``pct`` % change 80 % of the time,
    with this spread pooled over ``variants`` variants; None past MAX_PROCESSES."""
    for k in range(2, MAX_PROCESSES + 1):
        after = replace(noise, df=max(noise.df, variants * (k - 1)),
                        round_df=max(noise.round_df, (variants - 1) * (k - 1)) if noise.round_df else 0)
        if detectable_pct(after, k, k) <= pct:
            return k
    return None


def session_plan(rows: list[RunStats], noise: Noise, pct: float = 10.0) -> dict:
    """What a session's processes can tell: the least speedup (%) it tells from none between two
    of its variants, and the processes a variant that would tell ``pct`` %."""
    k = max([measured_processes(r) for r in rows if r.processes] + [1])  # none measured yet: 1
    variants = max(2, sum(1 for r in rows if r.processes) or len(rows))
    least = detectable_pct(noise, k, k)
    return {"processes": k, "detectable_pct": round(least, 2), "target_pct": pct,
            "processes_for_target": processes_for(noise, pct, variants), "untold": untold_change(least)}
