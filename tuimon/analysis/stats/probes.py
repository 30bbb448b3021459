"""The probes' samples of a run, over its steady state and outside its pauses: CPU and memory of
its process tree, and the GPU figures of the devices it used; and, from the same samples, the
other processes' load while it stepped (stats/load.py)."""

from __future__ import annotations

import statistics
from dataclasses import replace
from typing import Any

from tuimon import events
from tuimon.analysis.stats.load import foreign_load
from tuimon.analysis.stats.records import Load, Probes
from tuimon.analysis.stats.rows import RunStats, max_of, mean_of
from tuimon.analysis.stats.steady_state import steady_window


def probe_stats(r: RunStats, run_steps: list[dict], samples: list[dict], pauses: list[list],
                quiet_only: bool = False, own: bool = True) -> tuple[Probes, Load]:
    """``r``'s Probes (the memory events' peaks it has, and the samples' figures) and its Load
    with the other processes' load while it stepped (its steady steps' load is in ``r.load``)."""
    # A paused runner idles: its samples would pull the load figures down.
    mine = [(s, s["runs"][r.run]) for s in samples if r.run in s.get("runs", {})
            and not any(a <= s["t"] and (b is None or s["t"] <= b) for a, b in pauses)]
    span = steady_window(run_steps)
    if span is not None:
        steady = [(s, v) for s, v in mine if span[0] <= s["t"] <= span[1]]
        mine = steady or mine  # a run shorter than a sampling period: use what there is
    if not mine:
        return replace(r.probes, samples=0), r.load
    # Other processes' load "while it stepped": a run that never stepped has none.
    load = foreign_load(r.run, r.load, mine, quiet_only, own) if run_steps else r.load
    host = [v for _, v in mine]
    found = {"samples": len(mine),
             "cpu_mean": mean_of([v.get("cpu_percent") for v in host]),
             "cpu_max": max_of([v.get("cpu_percent") for v in host]),
             "tree_rss_max": max_of([v.get("rss") for v in host]),
             "children_max": max_of([v.get("descendants") for v in host]),
             "gpu_proc_mem_max": max_of([v.get("gpu_mem") for v in host])}
    devices = [d for s, v in mine for d in s.get("devices", []) if d.get("index") in v.get("gpus", [])]
    if not devices:
        return replace(r.probes, **found), load
    known = [d for d in devices if d.get("throttle_reasons") is not None]
    reasons: dict[str, int] = {}
    throttled = 0
    for d in known:
        active = [x for x in d["throttle_reasons"] if x not in events.BENIGN_THROTTLE]
        throttled += bool(active)
        for reason in active:
            reasons[reason] = reasons.get(reason, 0) + 1
    return replace(r.probes, **found,
                   gpu_util_mean=mean_of([d.get("util_gpu") for d in devices]),
                   vram_max=max_of([d.get("mem_used") for d in devices]),
                   temp_max=max_of([d.get("temp_c") for d in devices]),
                   power_mean=mean_of([d.get("power_w") for d in devices]),
                   throttle_reasons=reasons, throttled_share=throttled / len(known) if known else None), load


def combine_probes(group: list[RunStats], timed: list[RunStats]) -> Probes:
    """A --repeats variant's: what it measured while stepping, the median over the processes its
    step time rests on (``timed``); peaks, the highest of every process; every sample."""
    def median(key: str) -> float | None:
        values = [getattr(r.probes, key) for r in timed if getattr(r.probes, key) is not None]
        return statistics.median(values) if values else None

    peaks = ("peak_rss", "cuda_peak_allocated", "cuda_peak_reserved", "cpu_max", "tree_rss_max",
             "children_max", "vram_max", "gpu_proc_mem_max", "temp_max")
    stepping = ("cpu_mean", "gpu_util_mean", "power_mean", "throttled_share")
    # a figure of each kind Probes holds (floats, byte counts), each None when not measured
    figures: dict[str, Any] = {key: median(key) for key in stepping}
    figures |= {key: max_of([getattr(r.probes, key) for r in group]) for key in peaks}
    return Probes(**figures,
                  samples=sum(r.probes.samples for r in group))
