"""--until-known's intervals under optional stopping (issue 42): simulated sessions of two
variants in rounds, looked at after every round from the third, stopped as soon as the interval
excludes 1 or lies within ±3 %. The intervals are the verdict's own (noise.py's paired rounds,
``ratio_interval``), with the session's group-sequential design (sequential.py) or without it.
Seeded, pure Python, a few seconds."""

from __future__ import annotations

import math
import random
from dataclasses import replace

from tuimon.analysis.stats.known import decided
from tuimon.analysis.stats.noise import pooled, ratio_interval, within_rounds
from tuimon.analysis.stats.rows import RunStats
from tuimon.analysis.stats.sequential import Design, t_crit, z_bounds

DRIFT = 0.3  # σ of a round's shared level (the machine's drift, which the rounds pair away)
SD = 0.10  # σ of a process's log median within its round


def session(rng: random.Random, design: Design | None, speedup: float = 1.0, sd: float = SD,
            max_rounds: int = 20) -> tuple[str | None, int]:
    """(what the first decided look said, its round); (None, max_rounds) when none decided."""
    a: list[dict] = []
    b: list[dict] = []
    for k in range(1, max_rounds + 1):
        level = rng.gauss(0.0, DRIFT)
        a.append({"round": k, "median_ms": 10.0 * math.exp(level + rng.gauss(0.0, sd))})
        b.append({"round": k, "median_ms": 10.0 / speedup * math.exp(level + rng.gauss(0.0, sd))})
        if k < 3:
            continue
        rows = [RunStats("e", "eager", "fp32", processes=list(a)),
                RunStats("d", "default", "fp32", processes=list(b))]
        noise = replace(within_rounds(rows, pooled(rows)), design=design)
        ratio = math.exp(sum(math.log(p["median_ms"]) for p in a) / k
                         - sum(math.log(p["median_ms"]) for p in b) / k)
        lo, hi = ratio_interval(rows[0], rows[1], ratio, noise)
        said = decided(lo, hi, 0.03)
        if said is not None:
            return said, k
    return None, max_rounds


def claims(design: Design | None, n: int, seed: int) -> float:
    rng = random.Random(seed)
    return sum(session(rng, design)[0] in ("faster", "slower") for _ in range(n)) / n


def test_stopping_on_the_sequential_intervals_keeps_false_claims_near_five_percent():
    """A/A, 500 sessions of up to 20 rounds: stopping on the design's intervals claims a
    difference in 3.6 % of them (2,000 other sessions: 3.75 %); stopping the first time a plain
    95 % interval excludes 1 claims one in 24.4 % (22.85 %): the bound a fixed interval fails."""
    assert claims(Design(), 500, seed=1) <= 0.065
    assert claims(None, 500, seed=1) >= 0.15


def test_a_real_difference_is_still_found_and_a_quiet_no_difference_is_called_the_same():
    rng = random.Random(2)
    slower = [session(rng, Design(), speedup=1 / 1.15) for _ in range(100)]
    assert sum(said == "slower" for said, _ in slower) >= 90  # 15 % slower: 96 % of 200 found
    assert sum(said == "faster" for said, _ in slower) == 0
    rng = random.Random(3)
    quiet = [session(rng, Design(), sd=0.01) for _ in range(100)]
    assert sum(said == "same" for said, _ in quiet) >= 95
    assert sum(k for _, k in quiet) / len(quiet) < 10  # well before the last round


def test_the_design_spends_its_alpha_over_the_looks():
    """Pocock-type spending: every look's boundary above the fixed 1.96, the first the widest of
    the early ones, and the chance of crossing by the last look what was spent (checked on the
    normal: the nominal levels add up to no more than alpha)."""
    design = Design()
    bounds = z_bounds(design.looks, design.spending, design.alpha)
    assert len(bounds) == design.max_rounds - design.min_rounds + 1
    assert all(c > 1.96 for c in bounds)
    levels = [design.level(k) for k in range(design.min_rounds, design.max_rounds + 1)]
    assert sum(levels) >= design.alpha  # the looks overlap: their levels add to more than alpha
    assert max(levels) < design.alpha
    assert design.level(2) is None and design.crit(2, 1) is None
    assert design.level(30) == design.level(design.max_rounds)  # past the last look: the last's


def test_student_t_quantiles():
    assert math.isclose(t_crit(0.05, 2), 4.303, abs_tol=1e-3)
    assert math.isclose(t_crit(0.05, 10), 2.228, abs_tol=1e-3)
    assert math.isclose(t_crit(0.01, 5), 4.032, abs_tol=1e-3)
    assert math.isclose(t_crit(0.05, math.inf), 1.960, abs_tol=1e-3)
