"""The ranks of a job against each other, over its steady state: each rank's step and own time
(its step less what it waited for a slower rank: under DDP every rank's step ends together, so
step times alone cannot tell who is slow), the skew, stragglers and the phase they are slow in,
and compiles that diverge across ranks. Plain numbers in, numbers out. The method:
docs/ranks.md ("Own time", "The straggler's phase"). On CUDA ``pre_ms`` is the host's time: a
rank slowed on its GPU alone shows in its GPU figures more than here."""

from __future__ import annotations

import math
import statistics

from tuimon.analysis.stats.intervals import lag1_autocorr, median_interval, percentile
from tuimon.analysis.stats.point import Point, point
from tuimon.events import OTHER, STEP_PHASES

STRAGGLER_PCT = 5.0  # slower than the others by less than this is noise, whatever the interval
MIN_STEPS = 10  # steady steps a rank needs before it can be called a straggler
CHANGE_PENALTY = 3.0  # × log n: what a change in the share of slow steps must beat (_changed)


def own_times(steps: dict[int, dict]) -> dict[int, float]:
    """Each rank's own time at one step (``steps``: rank -> its step event)."""
    ms = {r: s["ms"] for r, s in steps.items()}
    pre = {r: s.get("pre_ms") for r, s in steps.items()}
    if len(steps) < 2 or any(v is None for v in pre.values()):
        return ms
    last = max(pre, key=pre.get)
    own = {}
    for r in steps:
        wait = max(0.0, (pre[last] - pre[r]) - max(0.0, ms[last] - ms[r]))
        own[r] = max(0.0, ms[r] - wait)
    return own


def rank_medians(series: list[tuple]) -> dict:
    """One rank's medians over its measured steps: (i, ms, own, pre) tuples."""
    if not series:
        return {}
    ms = sorted(x[1] for x in series)
    pres = [x[3] for x in series if x[3] is not None]
    return {"median_ms": statistics.median(ms), "p90_ms": percentile(ms, 0.9),
            "own_ms": statistics.median(x[2] for x in series),
            "pre_ms": statistics.median(pres) if pres else None}


def skew_pct(own: dict[int, float]) -> float | None:
    """Slowest rank's median own time against the median rank's, in %."""
    if len(own) < 2:
        return None
    middle = statistics.median_low(own.values())  # a rank of the job, not between two
    return (max(own.values()) - middle) / middle * 100.0 if middle > 0 else None


def stragglers(series: dict[int, list[tuple]]) -> list[dict]:
    """Ranks slower than the others beyond noise, slowest first: {rank, slower_pct, slower_ms,
    since, steps, and when the steps carry a split, the phase it is slow in: phase, phase_ms}.
    ``series``: rank -> (i, ms, own, pre[, ph]) over the steady state. "The others" at
    a step: the other rank of two; past two, the median of every rank there (one rank moves it
    by one order statistic at most, and it is computed once a step, not once a rank)."""
    if len(series) < 2:
        return []
    by_step: dict[int, dict[int, float]] = {}
    for rank, rows in series.items():
        for row in rows:
            by_step.setdefault(row[0], {})[rank] = row[2]
    steps = sorted(i for i, row in by_step.items() if len(row) >= 2)
    middle_of = {i: statistics.median(by_step[i].values()) for i in steps} if len(series) > 2 else {}
    found = []
    for rank in series:
        diffs, base = [], []
        for i in steps:
            row = by_step[i]
            own = row.get(rank)
            if own is None:
                continue
            others = middle_of[i] if middle_of else next(v for r, v in row.items() if r != rank)
            diffs.append((i, own - others))
            base.append(others)
        if len(diffs) < MIN_STEPS:
            continue
        typical = statistics.median(base)
        if typical <= 0:
            continue
        threshold = typical * STRAGGLER_PCT / 100.0
        since = _stretch(diffs, threshold)
        if since is None:  # slow once, not at the end
            continue
        stretch = diffs[since:]
        if len(stretch) < MIN_STEPS:
            continue
        values = [d for _, d in stretch]
        middle = statistics.median(values)
        lo, _ = median_interval(sorted(values), lag1_autocorr(values))
        pct = middle / typical * 100.0
        if lo > 0 and pct >= STRAGGLER_PCT:
            found.append({"rank": rank, "slower_pct": round(pct, 1), "slower_ms": round(middle, 3),
                          "since": stretch[0][0], "steps": len(stretch),
                          **slow_phase(series, rank, stretch[0][0])})
    return sorted(found, key=lambda s: -s["slower_pct"])


def _parts(row: tuple) -> dict[str, float] | None:
    """One rank's step split in ms, with its backward less its wait for slower ranks (DDP's
    all-reduce waits inside backward: ``wait = ms - own``); None without a split."""
    ph = row[4] if len(row) > 4 else None
    if not ph or None in ph:
        return None
    parts = dict.fromkeys(STEP_PHASES, 0.0)  # eval: in a step that ran some (a fifth entry)
    parts.update(zip(STEP_PHASES, (v / 1000.0 for v in ph), strict=False))
    parts["backward"] = max(0.0, parts["backward"] - max(0.0, row[1] - row[2]))
    parts[OTHER] = max(0.0, row[2] - sum(parts.values()))
    return parts


def slow_phase(series: dict[int, list[tuple]], rank: int, since: int) -> dict:
    """The phase a straggler is slow in, from ``since`` on: the one whose time (backward less the
    all-reduce wait) exceeds the other ranks' most, by the median over the steps
    ({"phase", "phase_ms"}; {} when its steps have no split)."""
    mine = {row[0]: p for row in series[rank] if row[0] >= since and (p := _parts(row))}
    others: dict[int, list[dict]] = {}
    for r, rows in series.items():
        if r != rank:
            for row in rows:
                if row[0] in mine and (p := _parts(row)):
                    others.setdefault(row[0], []).append(p)
    steps = [i for i in mine if i in others]
    if len(steps) < MIN_STEPS:
        return {}
    excess = {name: statistics.median(
        mine[i][name] - statistics.median(p[name] for p in others[i]) for i in steps)
        for name in (*STEP_PHASES, OTHER)}
    name = max(excess, key=excess.get)
    return {"phase": name, "phase_ms": round(excess[name], 3)} if excess[name] > 0 else {}


def _stretch(diffs: list[tuple[int, float]], threshold: float) -> int | None:
    """Where the slow stretch that ends the series starts (an index into ``diffs``), or None
    when the rank recovered. Steps count +1 above ``threshold`` and -1 at or below it: the
    stretch ends at the running count's highest point and starts at its lowest point before
    that. The steps after its end mean a recovery, and those before its start a later start
    than the steady state's first step (else 0: slow from the start), only when the share of
    slow steps changes there beyond chance (``_changed``). (A rolling median restarted the
    stretch at any window of noise, which on a busy machine dated a rank slow from step 1 to
    "since step 1747".)"""
    counts = _counts(diffs, threshold)
    top = max(range(len(counts)), key=counts.__getitem__)
    at = min(range(top + 1), key=counts.__getitem__)
    if _changed(counts, at, top, len(diffs)):
        return None
    if not _changed(counts, 0, at, len(diffs)):
        return 0
    # Dated again against the level halfway between the two medians: the sharpest split.
    level = (statistics.median(d for _, d in diffs[:at]) + statistics.median(d for _, d in diffs[at:])) / 2
    counts = _counts(diffs[:top], level)
    return min(range(len(counts)), key=counts.__getitem__)


def _counts(diffs: list[tuple[int, float]], level: float) -> list[int]:
    """The running count of steps above ``level`` less those at or below it (0 first)."""
    counts = [0]
    for _, d in diffs:
        counts.append(counts[-1] + (1 if d > level else -1))
    return counts


def _changed(counts: list[int], i: int, k: int, n: int) -> bool:
    """Do the steps [i, k) and [k, n) differ in their share of slow steps beyond chance? Twice
    the log-likelihood ratio of two shares against one (binomial) above ``CHANGE_PENALTY`` ×
    log n: the change's place was picked as the most telling one, so chance alone makes some
    ratio large in a long noisy series (a BIC-like penalty, grown with n)."""
    if k - i < MIN_STEPS or n - k < MIN_STEPS:
        return False

    def loglik(a: int, m: int) -> float:
        return sum(x * math.log(x / m) for x in (a, m - a) if x)

    above = [(counts[b] - counts[a] + b - a) // 2 for a, b in ((i, k), (k, n))]
    ratio = loglik(above[0], k - i) + loglik(above[1], n - k) - loglik(sum(above), n - i)
    return 2 * ratio > CHANGE_PENALTY * math.log(n)


def divergence(ranks: dict[int, dict], last_i: dict[int, int]) -> list[Point]:
    """Compiles that differ between ranks: ``counts`` (graphs, breaks or recompiles: rank ->
    count) and ``step`` (a step that compiled on some ranks only, with the first reason torch
    gave there). ``ranks``: rank -> {graphs, breaks, recompiles, compile_steps, reasons}. A step
    counts once every rank has stepped past it (a rank still behind may yet compile there), so
    a slow start is not a divergence."""
    if len(ranks) < 2:
        return []
    out = []
    settled = min(last_i.get(r, -1) for r in ranks)
    for key in ("graphs", "breaks", "recompiles"):
        values = {r: v[key] for r, v in ranks.items()}
        if len(set(values.values())) > 1 and all(last_i.get(r, -1) > _last_compile(ranks)
                                                   for r in ranks):
            out.append(point("counts", what=key, groups=_groups(values)))
    steps = sorted({i for v in ranks.values() for i in v["compile_steps"] if i < settled})
    for i in steps:
        on = [r for r, v in ranks.items() if i in v["compile_steps"]]
        if len(on) < len(ranks):
            why = next((ranks[r]["reasons"][0] for r in on if ranks[r]["reasons"]), None)
            out.append(point("step", step=i, ranks=on, why=why))
        if len(out) >= 6:
            break
    return out


def _last_compile(ranks: dict[int, dict]) -> int:
    return max((i for v in ranks.values() for i in v["compile_steps"]), default=-1)


def _groups(values: dict[int, int]) -> list[tuple[list[int], int]]:
    """[(ranks, value)], the smallest group first: [([1], 3), ([0, 2, 3], 2)]."""
    by: dict[int, list[int]] = {}
    for r, v in sorted(values.items()):
        by.setdefault(v, []).append(r)
    return [(rs, v) for v, rs in sorted(by.items(), key=lambda kv: len(kv[1]))]


def diverging(points: list[Point]) -> set[int]:
    """The ranks compile divergence names: those a step compiled on alone, and every group but
    the largest whose counts differ."""
    out: set[int] = set()
    for p in points:
        if p.code == "step":
            out.update(p.get("ranks"))
        else:
            out.update(r for ranks, _ in p.get("groups")[:-1] for r in ranks)
    return out
