"""--repeats K: one combined row per variant from its K processes (geometric mean of their
medians); ``noise_interval`` gives its interval once every row is combined (noise.py). A round
loaded by other processes while other rounds were quiet is the machine, not the model: its
processes are left out of every variant's step time alike, so the rounds stay paired
(docs/measuring.md#repeats-the-spread-between-processes)."""

from __future__ import annotations

import math
import statistics
from dataclasses import replace

from tuimon.analysis.stats.intervals import log_se
from tuimon.analysis.stats.load import busy, load_cores, load_figures
from tuimon.analysis.stats.noise import Noise, row_variance
from tuimon.analysis.stats.point import Point, point
from tuimon.analysis.stats.probes import combine_probes
from tuimon.analysis.stats.records import Compiles, Failure, Load, Losses, Timing
from tuimon.analysis.stats.replicate_jobs import combine_job
from tuimon.analysis.stats.rows import RunStats, max_of, mean_of
from tuimon.analysis.stats.warm import combine_starts
from tuimon.axes import id_part


def combine_replicates(runs: list[RunStats]) -> dict[str, RunStats]:
    """One row per variant run in several processes (--repeats), keyed like a run id. Call it
    once every run's load is known (probe_stats)."""
    groups: dict[tuple, list[RunStats]] = {}
    for r in runs:
        if r.replicate is not None:
            groups.setdefault(r.key, []).append(r)
    out = busy_rounds([r for g in groups.values() for r in g])
    return {row.run: row for row in (_combined(g, out) for g in groups.values())}


# Probe samples (one a second by default) a process's load must rest on before its round is left
# out: a process of 10 steps of 2.5 ms falls in one sample period, whose load may be anything
# (another round's processes exiting); left out, it took a quiet round with it.
BUSY_SAMPLES = 3


def busy_rounds(runs: list[RunStats]) -> dict[int, Point]:
    """{round: why (busy_round: the load its busiest process met)} for the rounds to leave out:
    those in which a measured process stepped under
    other processes' load, when at least one round had none; {} when no round, or every round,
    was busy."""
    rounds: dict[int, list[RunStats]] = {}
    for r in runs:
        if r.timing.median_ms and r.replicate is not None:
            rounds.setdefault(r.replicate, []).append(r)
    busy_ones = {k: [r for r in rs if busy(r) and r.probes.samples >= BUSY_SAMPLES] for k,
                 rs in rounds.items()}
    busy_ones = {k: rs for k, rs in busy_ones.items() if rs}
    if not busy_ones or len(busy_ones) == len(rounds):
        return {}
    out = {}
    for k, rs in busy_ones.items():
        worst = max(rs, key=lambda r: (load_cores(r) or 0.0, r.load.foreign_gpu_sm or 0))
        out[k] = point("busy_round", round=k, label=worst.label, load=load_figures(worst))
    return out


def _process(r: RunStats) -> dict:
    return {"run": r.run, "round": r.replicate, "median_ms": r.timing.median_ms, "status": r.status,
            "steps": r.timing.steps, "measured": r.timing.measured, "load_cores": load_cores(r),
            "busy": busy(r)}


def _combined(group: list[RunStats], left_out: dict[int, Point]) -> RunStats:
    group = sorted(group, key=lambda r: r.replicate or 0)
    first = group[0]
    k = len(group)
    timed = [r for r in group if r.replicate not in left_out]  # what its step time rests on
    statuses = {r.status for r in group if r.status != "not run"} or {"not run"}
    doubted = next((r for r in timed if r.doubts), None)  # its first doubted process speaks for it

    def median(group: list[RunStats], value) -> float | None:
        values = [v for v in map(value, group) if v is not None]
        return statistics.median(values) if values else None

    timing = Timing(warmup_auto=first.timing.warmup_auto, steps=sum(r.timing.steps for r in group),
                    measured=sum(r.timing.measured for r in timed),
                    warmup_steps=sum(r.timing.warmup_steps for r in timed),
                    gap_steps=sum(r.timing.gap_steps for r in group),
                    # Compiles: every process.
                    overhead_s=median(group, lambda r: r.timing.overhead_s),
                    first_step_ms=median(group, lambda r: r.timing.first_step_ms),
                    # What it measured while stepping: the rounds it rests on.
                    mean_data_ms=median(timed, lambda r: r.timing.mean_data_ms))
    # One run of the user's script recompiles as one process does (each process runs it, round 1
    # whole): the same recompiles in every process are not K times as many.
    compiles = Compiles(compiles=sum(r.compile.compiles for r in group),
                        recompiles=max((r.compile.recompiles for r in group), default=0),
                        recompile_reasons=list(dict.fromkeys(x for r in group
                                                             for x in r.compile.recompile_reasons)),
                        graph_breaks=first.compile.graph_breaks, compile_phases=first.compile.compile_phases,
                        compile_failures=first.compile.compile_failures, cudagraphs=first.compile.cudagraphs,
                        graphs_fwd=first.compile.graphs_fwd, graphs_bwd=first.compile.graphs_bwd,
                        fx_cache_hits=sum(r.compile.fx_cache_hits for r in group),
                        fx_cache_misses=sum(r.compile.fx_cache_misses for r in group),
                        compile_s=median(group, lambda r: r.compile.compile_s))
    # Other processes' load while it stepped: the mean over the rounds it rests on (the table's
    # "other processes while it stepped", the verdict's load gap and busy judgement).
    load = Load(own_load=first.load.own_load, faults_per_step=median(timed, lambda r: r.load.faults_per_step),
                **{key: mean_of([getattr(r.load, key) for r in timed])
                   for key in ("foreign_cores", "own_cores", "foreign_gpu_sm")},
                foreign_gpu_mem=max_of([r.load.foreign_gpu_mem for r in timed]),
                foreign_gpu_pids=sorted({p for r in timed for p in r.load.foreign_gpu_pids})[:5],
                busy_dropped=sum(r.load.busy_dropped for r in timed),
                own_dropped=sum(r.load.own_dropped for r in timed))
    row = RunStats(
        f"{first.mode}-{first.precision}{id_part(tuple(first.axes.items()))}×{k}", first.mode,
        first.precision, axes=dict(first.axes),
        left_out=[{**_process(r), "why": left_out[r.replicate]} for r in group if r.replicate in left_out],
        processes=[_process(r) for r in timed],
        status=next((s for s in ("failed", "running", "queued", "stopped") if s in statuses), "done"),
        failure=Failure(error=next((f"{r.run}: {r.failure.error}" for r in group if r.failure.error), None)),
        device=first.device, device_name=first.device_name, params=first.params, batch_size=first.batch_size,
        notes=list(first.notes), turns=sum(r.turns for r in group), paused_s=sum(r.paused_s for r in group),
        fixes=dict(first.fixes),  # what its child said of tuimon try's fixes (round 1's)
        anatomy=first.anatomy,  # how its loop was read: round 1's, which runs the whole length
        repeated=first.repeated,
        warnings=list(dict.fromkeys(w for r in group for w in r.warnings)),
        doubts=[Point(d.code, {**d.figures, "process": doubted.run}) for d in doubted.doubts]
        if doubted else [],
        timing=timing, compile=compiles, load=load, probes=combine_probes(group, timed),
        job=combine_job(group, timed),  # a torchrun job's world, its ranks over the rounds
        loss=Losses(final_loss=first.loss.final_loss,
                    loss_nonfinite=sum(r.loss.loss_nonfinite for r in group)))
    row = combine_starts(row, group)  # compile figures: cold and warm processes apart (warm.py)
    measured = [r for r in timed if r.timing.median_ms]
    if not measured:
        return row
    n = len(measured)
    median_ms = geometric_mean([r.timing.median_ms for r in measured])
    # Samples (or steps) per step ÷ the combined median, as for one process: a median of the
    # processes' throughputs would give the row a fractional batch (31.97 against 32.02 samples),
    # read as a batch-size axis: the verdict and the axes would weigh per sample.
    sizes = [r.timing.throughput * r.timing.median_ms / 1000.0 for r in measured if r.timing.throughput]
    # The least the processes' own step noise allows (with two or three processes their spread
    # can come out near zero by luck).
    within = [log_se(r) for r in measured]
    row.timing = replace(
        # p10 and p90 as the median is: geometric means of the processes' own, so the row's
        # median lies between them (medians of each would not: "1.56 s (1.30 s–1.54 s)").
        row.timing, median_ms=median_ms, p10_ms=geometric_mean([r.timing.p10_ms for r in measured]),
        p90_ms=geometric_mean([r.timing.p90_ms for r in measured]),
        throughput=statistics.median(sizes) / (median_ms / 1000.0) if sizes else None,
        throughput_unit=measured[0].timing.throughput_unit,
        # a process too short for an interval of its own: no floor to trust
        within_log_se=math.sqrt(sum(x * x for x in within)) / n if None not in within else None)
    return row


def geometric_mean(values: list[float | None]) -> float | None:
    kept = [v for v in values if v]
    return math.exp(statistics.fmean(math.log(v) for v in kept)) if kept else None


def noise_interval(row: RunStats, noise: Noise) -> Timing:
    """A combined row's Timing with its standard error and median interval, from the pooled
    spread."""
    var = row_variance(row, noise)
    t = row.timing
    if var is None or not t.median_ms:
        return t
    se = math.sqrt(var)
    half = noise.crit * se
    return replace(t, log_se=se, median_ci_lo=t.median_ms * math.exp(-half),
                   median_ci_hi=t.median_ms * math.exp(half))
