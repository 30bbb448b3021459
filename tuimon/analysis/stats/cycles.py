"""Steps that repeat in cycles (SAC steps its actor every other step; a WGAN its generator every
fifth): their median is no training step's, their mean is what the loop costs. Where the steps
repeat every k steps (autocorrelation at lag k of ``REPEATS`` or more, but not at lag 1: drift
repeats at every lag) and the cycles' mean steps part from the median by ``UNEVEN`` or more,
the row's steps are the cycles' means (docs/measuring.md#steady-state-warm-up-and-compiles)."""

from __future__ import annotations

import statistics

UNEVEN = 0.10  # |mean - median| / median from which a row's steps are uneven
LONGEST = 64  # steps in the longest cycle looked for
CYCLES = 4  # whole cycles needed to judge one
REPEATS = 0.5  # autocorrelation at its lag from which the steps repeat


def cycle(ms: list[float], hint: int = 1) -> int:
    """The steps in a cycle of ``ms`` (step times, in step order): a lag at which they repeat
    (the anatomy's ``hint`` first), where a cycle's mean step parts from the steps' median by
    ``UNEVEN`` or more; 1 when no such cycle (the median stands)."""
    n = len(ms)
    if n < 2 * CYCLES:
        return 1
    median = statistics.median(ms)
    for k in _lags(ms, hint):
        if n >= CYCLES * k and abs(statistics.median(means(ms, k)) - median) >= UNEVEN * median:
            return k
    return 1


def session_cycle(found: list[int]) -> int:
    """The cycle every row of a session is weighed by: the one most rows found (the shortest
    of those tied), 1 when none found one. Never the longest: a noisy row passes a long lag
    now and then (SAC: 60 steps in one process of 24, where its loop's cycle is 2)."""
    counts: dict[int, int] = {}
    for k in found:
        if k > 1:
            counts[k] = counts.get(k, 0) + 1
    return min(counts, key=lambda k: (-counts[k], k)) if counts else 1


def means(ms: list[float], k: int) -> list[float]:
    """The mean step of each whole cycle of ``k`` steps, in order."""
    return [statistics.fmean(ms[j:j + k]) for j in range(0, len(ms) - k + 1, k)]


def _lags(ms: list[float], hint: int) -> list[int]:
    """The lags at which the steps repeat (autocorrelation ≥ REPEATS), the shortest first; with
    a ``hint`` (the loop's own cycle) that lag alone. Independent noise repeats at no lag."""
    n = len(ms)
    mu = statistics.fmean(ms)
    dev = [x - mu for x in ms]
    var = sum(d * d for d in dev)
    if not var:
        return []

    def r(k: int) -> float:
        return sum(dev[j] * dev[j + k] for j in range(n - k)) / var * n / (n - k)

    if hint > 1:  # the loop's own cycle (another optimizer's cadence): that one, or none
        return [hint] if r(hint) >= REPEATS else []
    # Steps that repeat at lag 1 too drift together (a load burst, a slower stretch): they repeat
    # at every short lag, which is no cycle. Alternating steps repeat at their lag only.
    drifting = r(1) >= REPEATS
    found = []
    for k in range(2, min(LONGEST, n // CYCLES) + 1):
        if not drifting and r(k) >= REPEATS:
            found.append(k)  # a cycle's multiples repeat too: the shortest first
    return found
