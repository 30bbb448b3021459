"""--repeats K: one combined row per variant from its K processes (geometric mean of their
medians). Its interval needs the spread between processes, pooled over every variant of the
session (noise.py): ``apply_noise`` sets it once the rows are all combined."""

from __future__ import annotations

import math
import statistics

from tuimon.analysis.stats.intervals import log_se
from tuimon.analysis.stats.noise import Noise, row_variance
from tuimon.analysis.stats.rows import RunStats, max_of
from tuimon.analysis.stats.warm import combine_starts
from tuimon.axes import id_part


def combine_replicates(runs: list[RunStats]) -> dict[str, RunStats]:
    """One row per variant run in several processes (--repeats), keyed like a run id."""
    groups: dict[tuple, list[RunStats]] = {}
    for r in runs:
        if r.replicate is not None:
            groups.setdefault(r.key, []).append(r)
    return {row.run: row for row in (_combined(g) for g in groups.values())}


def _combined(group: list[RunStats]) -> RunStats:
    first = group[0]
    k = len(group)
    row = RunStats(f"{first.mode}-{first.precision}{id_part(tuple(first.axes.items()))}×{k}",
                   first.mode, first.precision, axes=dict(first.axes))
    row.processes = [{"run": r.run, "median_ms": r.median_ms, "status": r.status, "round": r.replicate}
                     for r in group]
    statuses = {r.status for r in group}
    row.status = next((s for s in ("failed", "running", "queued", "stopped") if s in statuses), "done")
    row.error = next((f"{r.run}: {r.error}" for r in group if r.error), None)
    for key in ("device", "device_name", "params", "batch_size", "warmup_auto"):
        setattr(row, key, getattr(first, key))
    row.notes = list(first.notes)
    row.steps = sum(r.steps for r in group)
    row.measured = sum(r.measured for r in group)
    row.warmup_steps = sum(r.warmup_steps for r in group)
    row.turns = sum(r.turns for r in group)
    row.paused_s = sum(r.paused_s for r in group)
    row.compiles = sum(r.compiles for r in group)
    row.recompiles = sum(r.recompiles for r in group)
    row.recompile_reasons = list(dict.fromkeys(x for r in group for x in r.recompile_reasons))
    row.warnings = list(dict.fromkeys(w for r in group for w in r.warnings))
    row.unreliable = next((f"{r.run}: {r.unreliable}" for r in group if r.unreliable), None)
    row.graph_breaks, row.compile_phases = first.graph_breaks, first.compile_phases
    row.compile_failures, row.cudagraphs = first.compile_failures, first.cudagraphs
    row.graphs_fwd, row.graphs_bwd = first.graphs_fwd, first.graphs_bwd
    row.fx_cache_hits = sum(r.fx_cache_hits for r in group)
    row.fx_cache_misses = sum(r.fx_cache_misses for r in group)
    for key in ("compile_s", "overhead_s", "first_step_ms", "mean_data_ms", "cpu_mean",
                "gpu_util_mean", "power_mean", "throttled_share", "faults_per_step"):
        values = [getattr(r, key) for r in group if getattr(r, key) is not None]
        setattr(row, key, statistics.median(values) if values else None)
    for key in ("peak_rss", "cuda_peak_allocated", "cuda_peak_reserved", "cpu_max", "tree_rss_max",
                "children_max", "vram_max", "gpu_proc_mem_max", "temp_max"):
        setattr(row, key, max_of([getattr(r, key) for r in group]))
    combine_starts(row, group)  # compile figures: cold and warm processes apart (warm.py)
    row.samples = sum(r.samples for r in group)
    row.final_loss = first.final_loss
    row.loss_nonfinite = sum(r.loss_nonfinite for r in group)
    measured = [r for r in group if r.median_ms]
    if not measured:
        return row
    logs = [math.log(r.median_ms) for r in measured]
    n = len(logs)
    row.median_ms = math.exp(statistics.fmean(logs))
    row.p10_ms = statistics.median(r.p10_ms for r in measured)
    row.p90_ms = statistics.median(r.p90_ms for r in measured)
    # Samples (or steps) per step ÷ the combined median, as for one process: a median of the
    # processes' throughputs would give the row a fractional batch (31.97 against 32.02 samples),
    # read as a batch-size axis: the verdict and the axes would weigh per sample.
    sizes = [r.throughput * r.median_ms / 1000.0 for r in measured if r.throughput]
    row.throughput = statistics.median(sizes) / (row.median_ms / 1000.0) if sizes else None
    row.throughput_unit = measured[0].throughput_unit
    # The least the processes' own step noise allows (with two or three processes their spread
    # can come out near zero by luck).
    within = [log_se(r) for r in measured]
    if None not in within:  # a process too short for an interval of its own: no floor to trust
        row.within_log_se = math.sqrt(sum(x * x for x in within)) / n
    return row


def apply_noise(rows: list[RunStats], noise: Noise) -> None:
    """Each combined row's standard error and median interval, from the pooled spread."""
    for row in rows:
        var = row_variance(row, noise)
        if var is None or not row.median_ms:
            continue
        row.log_se = math.sqrt(var)
        half = noise.crit * row.log_se
        row.median_ci_lo, row.median_ci_hi = row.median_ms * math.exp(-half), row.median_ms * math.exp(half)
