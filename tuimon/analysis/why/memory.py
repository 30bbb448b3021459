"""Memory: a compiled variant that ran out of it, or peaks well above its eager baseline."""

from __future__ import annotations

from tuimon.analysis.stats.point import Point, point
from tuimon.analysis.why.finding import HIGH, INFO, MEDIUM, Context, Finding

MORE = 1.1  # 10 % above the baseline ...
MIN_BYTES = 64 * 2 ** 20  # ... and 64 MiB at least
METRICS = ("cuda_peak_allocated", "vram_max", "peak_rss")  # RunStats.probes: the most telling first


def memory(ctx: Context) -> list[Finding]:
    r, b = ctx.row, ctx.baseline
    out = []
    if r.failure.failure_kind in ("oom-cuda", "oom-host"):
        out.append(Finding("memory", point("memory.oom", label=r.label, error=r.failure.error),
                           [point("memory.error", text=r.failure.error
                                  or r.failure.failure_kind)], _advice(ctx), HIGH))
    if b is None:
        return out
    pairs = [(attr, getattr(r.probes, attr), getattr(b.probes, attr)) for attr in METRICS
             if getattr(r.probes, attr) and getattr(b.probes, attr)]
    if not pairs:
        return out
    name, mine, theirs = pairs[0]  # the most telling one measured in both
    if mine < theirs * MORE or mine - theirs < MIN_BYTES:
        return out
    evidence = [point("memory.metric", name=n, mine=x, theirs=y) for n, x, y in pairs]
    if name == "peak_rss":  # Inductor builds code in the process: part of it is a one-time cost
        evidence.append(point("memory.rss_compile"))
    what = point("memory.more", base=b.label, name=name, mine=mine, theirs=theirs)
    # Peak RSS holds the compile's own peak: worth saying, alarming only when far above.
    severity = HIGH if mine > 1.3 * theirs and name != "peak_rss" else MEDIUM
    if name == "peak_rss" and mine <= 1.3 * theirs:
        severity = INFO
    out.append(Finding("memory", what, evidence, _advice(ctx), severity))
    return out


def _advice(ctx: Context) -> list[Point]:
    tips = []
    if ctx.row.mode == "reduce-overhead":  # a memory pool per CUDA graph
        tips.append(point("memory.graph_pools"))
    if ctx.row.mode.startswith("max-autotune"):  # benchmarks kernels with extra workspace
        tips.append(point("memory.autotune"))
    tips.append(point("memory.activations"))
    return tips
