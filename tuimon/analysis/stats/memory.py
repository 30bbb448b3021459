"""Memory per phase on CUDA (docs/measuring.md#memory-per-phase, with the one assumption the
batch that would fit rests on): the allocator's peaks in each part of a few steps, what compile
saved or added against its baseline, torch's CUDA-graph pool, and the headroom to the device
turned into the largest batch that would fit.

Codes (report/memory_text.py words them): batch_fit_why: graph_pool, no_growth, no_budget,
over_budget; mem_na: cpu, short (fewer steps than the first memory step), unread."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

from tuimon.analysis.stats.compare import same_round
from tuimon.analysis.stats.point import point
from tuimon.analysis.stats.records import Memory
from tuimon.analysis.stats.rows import RunStats

# A phase's peak that moved by less than this share of its baseline's (or 1 MiB) is "same":
# allocator rounding (512 B blocks, 2 MiB segments) and the batch's own copy move it that much.
SAME_SHARE = 0.02
SAME_BYTES = 2**20
FIRST_STEP = 3  # runner/memory_phases.py's FIRST: a run with fewer steps has none measured


class MemoryFold:
    """A run's ``memory_phases`` events: the latest per-phase figures, the graph pool."""

    __slots__ = ("phases", "pool")

    def __init__(self) -> None:
        self.phases: dict | None = None
        self.pool: dict | None = None

    def add(self, e: dict) -> None:
        if "phases" in e:
            self.phases = e
        if "graph_pool" in e:
            self.pool = e


def memory_stats(r: RunStats, fold: MemoryFold | None) -> Memory:
    """``r``'s Memory from its events: n/a on a CPU, the phases' peaks and the batch that fits."""
    if not (r.device or "").startswith("cuda"):
        return Memory(mem_na="cpu") if r.device else Memory()
    pool = (fold.pool if fold is not None else None) or {}
    pooled: dict[str, Any] = {k: pool.get(k) for k in ("graph_pool", "graph_pool_used", "graph_pool_unread")}
    found = fold.phases if fold is not None else None
    if found is None:
        short = r.timing.steps <= FIRST_STEP
        return Memory(mem_na="short" if short else "unread", **pooled)
    phases = {name: {"peak": f.get("peak"), "end": f.get("end")}
              for name, f in (found.get("phases") or {}).items()}
    base, budget = found.get("base"), found.get("budget")
    fit, why = batch_fit(base, phases, budget, pooled["graph_pool"])
    return Memory(mem_phases=phases, mem_base=base, mem_budget=budget, mem_total=found.get("total"),
                  batch_fit=fit, batch_fit_why=why, **pooled)


def batch_fit(base: int | None, phases: dict[str, dict], budget: int | None,
              pool: int | None = None):
    """(k, None): the batch could grow ``k``× (rounded down to a tenth below 10, else whole);
    (None, Point) when it cannot be told, and why."""
    if pool:  # the activations live in the graph pool: the parts show none of them
        return None, point("graph_pool", pool=pool)
    if not budget:
        return None, point("no_budget")
    if base is None or not phases:
        return None, point("no_growth")
    limits, largest = [], 0
    for name, f in phases.items():
        peak = f.get("peak")
        if peak is None:
            continue
        largest = max(largest, peak)
        if name == "optimizer":
            fixed = peak  # the optimizer's temporaries follow the parameters, not the batch
        elif name == "backward" and f.get("end") is not None:
            fixed = min(peak, f["end"])  # gradients stay, activations are gone by its end
        else:
            fixed = min(peak, base)
        growing = peak - fixed
        if fixed > budget:
            return None, point("over_budget", peak=largest, budget=budget)
        if growing > 0:
            limits.append((budget - fixed) / growing)
    if largest > budget:
        return None, point("over_budget", peak=largest, budget=budget)
    if not limits:
        return None, point("no_growth")
    k = min(limits)
    return (math.floor(k * 10) / 10 if k < 10 else float(math.floor(k))), None


def memory_compare(r: RunStats, rows: dict[str, RunStats]) -> Memory:
    """``r``'s phases against its baseline's (the eager run its speedup is against, by label):
    each phase's difference in bytes, and whether compile saved, added or kept it the same."""
    m = r.memory
    labelled = [b for b in rows.values() if b.label == r.compare.baseline and b.memory.mem_phases]
    base = same_round(labelled, r)  # its own round's, as its speedup's (compare.py)
    if base is None or base is r or base.run == r.run or not m.mem_phases:
        return m
    theirs = base.memory.mem_phases
    phases = {}
    for name, f in m.mem_phases.items():
        other = theirs.get(name, {}).get("peak")
        if f.get("peak") is None or other is None:
            phases[name] = f
            continue
        delta = f["peak"] - other
        same = abs(delta) <= max(SAME_BYTES, SAME_SHARE * other)
        phases[name] = {**f, "vs_baseline": delta,
                        "change": "same" if same else ("saved" if delta < 0 else "added")}
    return replace(m, mem_phases=phases, mem_baseline=base.run)


def combine_memory(group: list[RunStats]) -> Memory:
    """A --repeats variant's: the process with the highest peak speaks for it (memory is the
    same program each time; the highest is what must fit)."""
    measured = [r.memory for r in group if r.memory.mem_phases]
    if not measured:
        return group[0].memory if group else Memory()
    return max(measured, key=lambda m: max(f.get("peak") or 0 for f in m.mem_phases.values()))
