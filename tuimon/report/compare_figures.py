"""A comparison's figures as text: for each variant, one row a figure with a cell per session and
the change the analysis found for it (``analysis.compare``). Layout only: every change comes from
there, every cell's words from ``report.table`` and ``fmt``."""

from __future__ import annotations

from dataclasses import dataclass

from tuimon.analysis import PHASES, Change, VariantDiff
from tuimon.fmt import DASH, fmt_bytes, fmt_loss, fmt_ms, fmt_rate, fmt_s
from tuimon.report.table import (
    cache_text,
    cpu_text,
    faults_text,
    graphs_text,
    measured_text,
    other_load_text,
    speedup_text,
)


@dataclass
class Metric:
    name: str
    values: list[str]  # per session, as text
    changes: list[Change | None]  # per session against the baseline (None for the baseline)
    kind: str = "time"  # how a change reads: time (slower / faster), size (more / less), other


def figures(v: VariantDiff) -> list[Metric]:
    rows = v.rows
    out: list[Metric] = []

    def metric(name: str, text, changes=None, kind: str = "time") -> None:
        values = [text(r) if r is not None else "not run" for r in rows]
        out.append(Metric(name, values, changes or [None] * len(rows), kind))

    if any(r is not None and r.status != "done" for r in rows):
        metric("status", lambda r: r.status + (f": {r.failure.error}" if r.failure.error else ""))
    metric("steps measured", measured_text)
    metric("median step (p10–p90)", lambda r: DASH if r.timing.median_ms is None else
           f"{fmt_ms(r.timing.median_ms)} ({fmt_ms(r.timing.p10_ms)}–{fmt_ms(r.timing.p90_ms)})", v.median)
    metric("throughput", lambda r: fmt_rate(r.timing.throughput, r.timing.throughput_unit))
    metric("speedup vs eager (in its session)", speedup_text)
    if any(r is not None and r.compiled for r in rows):
        metric("compile time", lambda r: fmt_s(cold_compile(r)), v.compile)
        if any(c is not None for c in v.warm_compile) or any(r is not None and "warm" in r.warm.starts
                                                             for r in rows):
            metric("compile time, warm start", lambda r: fmt_s((r.warm.starts.get("warm")
                                                                or {}).get("compile_s")),
                   v.warm_compile)
        for phase in PHASES:
            if any(r is not None and r.compile.compile_phases.get(phase) for r in rows):
                metric(f"compile: {phase}", lambda r, p=phase: fmt_s(r.compile.compile_phases.get(p)),
                       v.phases[phase])
        metric("graphs / breaks / recompiles", graphs_text)
        metric("Inductor cache", cache_text)
    metric("peak RSS", lambda r: fmt_bytes(r.probes.peak_rss), v.sizes["peak_rss"], "size")
    for attr, name in (("cuda_peak_allocated", "CUDA peak allocated"), ("vram_max", "VRAM used (NVML peak)")):
        if any(r is not None and getattr(r.probes, attr) for r in rows):
            metric(name, lambda r, a=attr: fmt_bytes(getattr(r.probes, a)), v.sizes[attr], "size")
    if any(r is not None and r.load.faults_per_step is not None for r in rows):  # analysis/stats/faults.py
        metric("page faults per step", faults_text)
    metric("final loss", lambda r: DASH if r.loss.final_loss is None else fmt_loss(r.loss.final_loss))
    drift = ["" if diff is None else f"max |Δ| {diff:.2g} over {common} steps" for diff, common in v.drift]
    if any(drift):
        out.append(Metric("loss vs A, same steps", drift, [None] * len(rows), "other"))
    metric("CPU, process tree (100 % = 1 core)", cpu_text)
    metric("other processes while it stepped", other_load_text)
    if any(r is not None and r.probes.gpu_util_mean is not None for r in rows):
        metric("GPU util (mean)", lambda r: DASH if r.probes.gpu_util_mean is None
               else f"{r.probes.gpu_util_mean:.0f} %")
    return out


def cold_compile(r) -> float | None:
    """A row's cold compile: its cold start's figure, or its own (recorded before warm starts)."""
    if not r.warm.starts:
        return r.compile.compile_s
    return (r.warm.starts.get("cold") or {}).get("compile_s", r.compile.compile_s)
