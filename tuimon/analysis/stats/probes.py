"""The probes' samples of a run, over its steady state and outside its pauses: CPU and memory of
its process tree, and the GPU figures of the devices it used."""

from __future__ import annotations

from tuimon import events
from tuimon.analysis.stats.load import foreign_stats
from tuimon.analysis.stats.rows import RunStats, max_of, mean_of
from tuimon.analysis.stats.steady_state import steady_window


def probe_stats(r: RunStats, run_steps: list[dict], samples: list[dict], pauses: list[list],
                quiet_only: bool = False, own: bool = True) -> None:
    # A paused runner idles: its samples would pull the load figures down.
    mine = [(s, s["runs"][r.run]) for s in samples if r.run in s.get("runs", {})
            and not any(a <= s["t"] and (b is None or s["t"] <= b) for a, b in pauses)]
    span = steady_window(run_steps)
    if span is not None:
        steady = [(s, v) for s, v in mine if span[0] <= s["t"] <= span[1]]
        mine = steady or mine  # a run shorter than a sampling period: use what there is
    r.probes.samples = len(mine)
    if not mine:
        return
    if run_steps:  # other processes' load "while it stepped": a run that never stepped has none
        foreign_stats(r, mine, quiet_only, own)
    host = [v for _, v in mine]
    r.probes.cpu_mean = mean_of([v.get("cpu_percent") for v in host])
    r.probes.cpu_max = max_of([v.get("cpu_percent") for v in host])
    r.probes.tree_rss_max = max_of([v.get("rss") for v in host])
    r.probes.children_max = max_of([v.get("descendants") for v in host])
    r.probes.gpu_proc_mem_max = max_of([v.get("gpu_mem") for v in host])
    devices = [d for s, v in mine for d in s.get("devices", []) if d.get("index") in v.get("gpus", [])]
    if not devices:
        return
    r.probes.gpu_util_mean = mean_of([d.get("util_gpu") for d in devices])
    r.probes.vram_max = max_of([d.get("mem_used") for d in devices])
    r.probes.temp_max = max_of([d.get("temp_c") for d in devices])
    r.probes.power_mean = mean_of([d.get("power_w") for d in devices])
    known = [d for d in devices if d.get("throttle_reasons") is not None]
    throttled = 0
    for d in known:
        active = [x for x in d["throttle_reasons"] if x not in events.BENIGN_THROTTLE]
        throttled += bool(active)
        for reason in active:
            r.probes.throttle_reasons[reason] = r.probes.throttle_reasons.get(reason, 0) + 1
    r.probes.throttled_share = throttled / len(known) if known else None
