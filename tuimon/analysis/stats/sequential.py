"""Intervals that stay honest when a session stops as soon as its answer is known (--until-known):
a group-sequential design with an alpha-spending function, looked at after every round.

Why not the fixed interval: a 95 % interval looked at after each round, and the session stopped the
first time it excludes 1, claims a difference far more often than 5 % of the time when there is
none (ten looks: about 20 %). A group-sequential design spends the 5 % over the looks instead: at
look j it allows only the part of alpha its spending function has not spent yet, so the chance of
ever crossing, over every look, is at most alpha. The intervals built from its boundaries are
*repeated confidence intervals* (Jennison & Turnbull, "Interim analyses: the repeated confidence
interval approach", JRSS B 51, 1989): together they cover the true speedup at every look with 95 %
probability, so any rule that stops on them ("it excludes 1", "it lies within ±3 %") keeps its
error rate. The spending function is Lan & DeMets's ("Discrete sequential boundaries for clinical
trials", Biometrika 70, 1983): the looks need not be planned, only the most information (rounds)
the session may reach, ``max_rounds``.

The boundaries are those of a z statistic (a Brownian motion in information time, here the
rounds), found by the recursive numerical integration of Armitage, McPherson and Rowe (1969),
Jennison & Turnbull's "Group Sequential Methods with Applications to Clinical Trials" (2000), ch.
19. The speedup's noise is not known but estimated from the rounds themselves (few degrees of
freedom: two variants of k rounds have k - 1), so each look's nominal level is carried over to
Student's t with that look's degrees of freedom: J&T's "significance level approach" to group
sequential t tests (§3.8), whose error rate they show to be close to alpha.

Plain Python (no scipy in the parent): the normal from ``statistics.NormalDist``, Student's t
from the regularized incomplete beta function (a continued fraction), its quantile by bisection.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from statistics import NormalDist

NORMAL = NormalDist()
# The error a session's claims keep, two-sided: the 95 % of every other interval tuimon shows. The
# spending function spends ALPHA, a little less: carried over to Student's t with a session's few
# degrees of freedom (2 at round 3) the looks' levels are J&T's approximation, and real step times
# are not normal (this project's VM flips between two speeds). Simulated A/A sessions of normal
# noise (tests/unit/test_known_sim.py's model, 2,000 sessions of up to 20 rounds) claimed a
# difference in 4.7 % with 0.05 spent and 3.75 % with 0.04: the margin is kept for the machine.
LEVEL = 0.05
ALPHA = 0.04
# Rounds before the first look: the spread within a round needs two degrees of freedom at least
# (two rounds give one, whose t quantile is 12.7: an interval that tells nothing).
MIN_ROUNDS = 3
# The most rounds a session may reach: noise.py's MAX_PROCESSES (--repeats' own limit). The
# budget usually ends a session before it: stopping short of the planned information spends less
# than alpha, which errs on the safe side.
MAX_ROUNDS = 20
POCOCK, OBF = "pocock", "obf"
# Points of the integration grid over a look's continuation region (Simpson's rule): J&T (ch. 19)
# find a few dozen enough for four-figure boundaries; 121 leave the error far below the simulation's.
GRID = 121


def spent(t: float, kind: str = POCOCK, alpha: float = ALPHA) -> float:
    """Lan-DeMets alpha spent by information fraction ``t`` (0..1): Pocock-type, alpha ln(1 + (e - 1) t),
    or O'Brien-Fleming-type, 2 - 2 Phi(z_{1-alpha/2} / sqrt(t))."""
    t = min(max(t, 0.0), 1.0)
    if t <= 0.0:
        return 0.0
    if kind == OBF:
        return 2.0 - 2.0 * NORMAL.cdf(NORMAL.inv_cdf(1.0 - alpha / 2.0) / math.sqrt(t))
    return alpha * math.log(1.0 + (math.e - 1.0) * t)


@lru_cache(maxsize=64)
def z_bounds(fractions: tuple[float, ...], kind: str = POCOCK, alpha: float = ALPHA) -> tuple[float, ...]:
    """The two-sided z boundary at each look (information ``fractions``, increasing, the last
    at most 1), each crossed first at that look with the probability the spending function adds
    there, under no difference."""
    bounds: list[float] = []
    grid: list[float] = []  # the score S (a Brownian motion in information time) at the last look
    dens: list[float] = []  # its sub-density there, over the continuation region
    before, t_before = 0.0, 0.0
    for t in fractions:
        target = spent(t, kind, alpha) - before
        if not bounds:  # the first look: one normal
            c = NORMAL.inv_cdf(1.0 - max(target, 1e-300) / 2.0)
        else:
            c = _next_bound(grid, dens, t - t_before, t, target)
        bounds.append(c)
        grid, dens = _carry(grid, dens, t - t_before, t, c, first=len(bounds) == 1)
        before, t_before = spent(t, kind, alpha), t
    return tuple(bounds)


def _weights(n: int, h: float) -> list[float]:
    """Simpson's weights over n points (odd) spaced h apart."""
    return [h / 3.0 * (1 if i in (0, n - 1) else 4 if i % 2 else 2) for i in range(n)]


def _exit(grid: list[float], dens: list[float], step: float, b: float) -> float:
    """P(crossing at this look, not before): from each S at the look before, |S + N(0, step)| >= b."""
    sd = math.sqrt(step)
    return sum(f * (NORMAL.cdf((-b - u) / sd) + NORMAL.cdf((u - b) / sd))
               for u, f in zip(grid, dens, strict=True))


def _next_bound(grid: list[float], dens: list[float], step: float, t: float, target: float) -> float:
    """The z boundary at this look that spends ``target`` (bisection: the exit falls as it grows)."""
    if target <= 0.0:
        return 40.0  # nothing to spend: a boundary never crossed
    lo, hi = 0.0, 40.0
    for _ in range(60):
        mid = (lo + hi) / 2.0
        if _exit(grid, dens, step, mid * math.sqrt(t)) > target:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2.0


def _carry(grid: list[float], dens: list[float], step: float, t: float, c: float,
           first: bool) -> tuple[list[float], list[float]]:
    """The sub-density of S over this look's continuation region (|S| < c sqrt(t)), weighted for
    integration: where the paths that never crossed are."""
    b = c * math.sqrt(t)
    h = 2.0 * b / (GRID - 1)
    points = [-b + i * h for i in range(GRID)]
    weights = _weights(GRID, h)
    sd = math.sqrt(step)
    if first:
        values = [math.exp(-s * s / (2 * t)) / math.sqrt(2 * math.pi * t) for s in points]
    else:
        norm = 1.0 / (sd * math.sqrt(2 * math.pi))
        values = [norm * sum(f * math.exp(-((s - u) ** 2) / (2 * step))
                             for u, f in zip(grid, dens, strict=True))
                  for s in points]
    return points, [v * w for v, w in zip(values, weights, strict=True)]


# ---- Student's t ---------------------------------------------------------------------------
def _beta_cf(a: float, b: float, x: float) -> float:
    """The continued fraction of the incomplete beta function (modified Lentz)."""
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    out = d
    for m in range(1, 300):
        m2 = 2 * m
        for num in (m * (b - m) * x / ((a + m2 - 1) * (a + m2)),
                    -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1))):
            d = 1.0 + num * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + num / c
            c = c if abs(c) > tiny else tiny
            out *= d * c
        if abs(d * c - 1.0) < 1e-14:
            break
    return out


def _beta_reg(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
                     + a * math.log(x) + b * math.log(1.0 - x))
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _beta_cf(a, b, x) / a
    return 1.0 - front * _beta_cf(b, a, 1.0 - x) / b


def t_tail(t: float, df: float) -> float:
    """P(|T| >= t) for Student's t with ``df`` degrees of freedom."""
    return _beta_reg(df / 2.0, 0.5, df / (df + t * t))


@lru_cache(maxsize=1024)
def t_crit(two_sided: float, df: float) -> float:
    """The t beyond which a two-sided level ``two_sided`` lies (e.g. 0.05, 2 df: 4.303)."""
    if df <= 0 or math.isinf(df):
        return NORMAL.inv_cdf(1.0 - two_sided / 2.0)
    lo, hi = 0.0, 1.0
    while t_tail(hi, df) > two_sided:
        hi *= 2.0
    for _ in range(80):
        mid = (lo + hi) / 2.0
        if t_tail(mid, df) > two_sided:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2.0


# ---- the design a session runs under ----------------------------------------------------------
@dataclass(frozen=True)
class Design:
    """How an --until-known session looks and stops: a look after every round from ``min_rounds``
    on, alpha spent by ``spending`` over ``max_rounds``, "the same" within ``margin`` either way."""

    margin: float = 0.03
    max_rounds: int = MAX_ROUNDS
    min_rounds: int = MIN_ROUNDS
    alpha: float = ALPHA
    spending: str = POCOCK

    @property
    def looks(self) -> tuple[float, ...]:
        return tuple(k / self.max_rounds for k in range(self.min_rounds, self.max_rounds + 1))

    def level(self, rounds: int) -> float | None:
        """The two-sided nominal level of the look after ``rounds`` rounds (past the last look,
        the last's); None before the first."""
        if rounds < self.min_rounds:
            return None
        bounds = z_bounds(self.looks, self.spending, self.alpha)
        c = bounds[min(rounds, self.max_rounds) - self.min_rounds]
        return 2.0 * (1.0 - NORMAL.cdf(c))

    def crit(self, rounds: int, df: float) -> float | None:
        """The t quantile a repeated confidence interval takes at this look, with ``df`` degrees
        of freedom for the noise; None before the first look."""
        level = self.level(rounds)
        return None if level is None else t_crit(level, df)

    def to_dict(self) -> dict:
        return {"margin": self.margin, "max_rounds": self.max_rounds, "min_rounds": self.min_rounds,
                "alpha": self.alpha, "spending": self.spending}

    @classmethod
    def from_dict(cls, data: dict | None) -> Design | None:
        if not data:
            return None
        keys = ("margin", "max_rounds", "min_rounds", "alpha", "spending")
        return cls(**{k: data[k] for k in keys if data.get(k) is not None})
