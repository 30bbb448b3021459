"""The rows every reader shows: one ``RunStats`` per run (and per combined variant), gathered in
a ``SessionSummary``; and the None-skipping aggregates that fill them (None is "not measured",
never zero)."""

from __future__ import annotations

import statistics
from dataclasses import asdict, dataclass, field
from typing import Any

from tuimon.analysis.stats.point import Point
from tuimon.axes import text as axes_text

# A variant whose losses end further than this from its reference's (as a share of the
# reference's first loss) is disqualified by the verdict (--loss-tolerance).
LOSS_TOLERANCE = 0.05


@dataclass
class RunStats:
    run: str
    mode: str
    precision: str
    status: str = "queued"  # queued | running | done | stopped | failed
    axes: dict[str, str] = field(default_factory=dict)  # its --set axis values (tuimon/axes.py)
    replicate: int | None = None  # --repeats: which of the variant's processes (1..K)
    # A combined row (--repeats): the processes its step time rests on, {run, round, median_ms,
    # steps, measured, status, load, busy} each; and those left out of it (a round under other
    # processes' load while other rounds were quiet: stats/replicates.py), each with its ``why``
    # (a Point: busy_round).
    processes: list[dict] = field(default_factory=list)
    left_out: list[dict] = field(default_factory=list)
    device: str | None = None
    device_name: str | None = None
    torch: str | None = None  # the run's own torch, Python and CUDA build (run_started)
    python: str | None = None
    cuda: str | None = None
    params: int | None = None
    batch_size: int | None = None
    notes: list[str] = field(default_factory=list)  # the runner's own (run_started)
    # Steps that met the session's other runs' load (stats/load.py): {steps, cores, dropped, share}
    own_load: dict | None = None
    steps: int = 0
    measured: int = 0
    # The length this process was asked to run (run_started: its round's share, tuimon/lengths.py);
    # None: the script's own end, or a recipe's own steps when the event predates it.
    length_steps: int | None = None
    length_s: float | None = None
    median_ms: float | None = None
    p10_ms: float | None = None
    p90_ms: float | None = None
    mean_data_ms: float | None = None
    throughput: float | None = None  # samples per second at the median step
    loss_comparable: bool | None = None  # same first loss as its baseline (None: unknown)
    loss_apart: str | None = None  # why not: unseeded | random ops | unknown (stats/compare.py)
    losses_per_step: int = 1  # backward() calls a step: its loss is the last one's (a script)
    throughput_unit: str = "samples"  # "steps" for a script whose batches tuimon cannot see
    first_step_ms: float | None = None
    warmup_steps: int = 0
    gap_steps: int = 0  # a script's steps that held a validation pass, kept apart (steady_state.py)
    warmup_auto: bool = True  # warm-up found in the data (MSER-5) rather than fixed
    steady_from: int | None = None  # index of the first steady-state step
    median_ci_lo: float | None = None  # 95 % interval of the median step (ms)
    median_ci_hi: float | None = None
    log_se: float | None = None  # a combined row: standard error of its log median (noise.py)
    within_log_se: float | None = None  # ... the least its processes' own step noise allows
    autocorr: float | None = None  # lag-1 autocorrelation of the steady step times
    overhead_s: float | None = None
    compile_s: float | None = None
    compiles: int = 0
    speedup: float | None = None
    speedup_lo: float | None = None  # 95 % interval of the speedup
    speedup_hi: float | None = None
    within_noise: bool = False  # the interval contains 1.0
    foreign_cores: float | None = None  # other processes' CPU while it stepped (mean, cores)
    foreign_gpu_sm: float | None = None  # other processes on its GPUs: SM % (mean)
    foreign_gpu_mem: int | None = None  # ... their memory (max, bytes)
    foreign_gpu_pids: list[int] = field(default_factory=list)
    load_differs: bool = False  # its neighbours differed from its baseline's (doubts say how)
    busy_dropped: int = 0  # --quiet-only: steady steps kept out for other processes' load
    own_cores: float | None = None  # the session's other runs' CPU while it stepped (mean, cores)
    own_dropped: int = 0  # steady steps kept out for the session's other runs' load (stats/load.py)
    faults_per_step: float | None = None  # minor page faults a steady step (stats/faults.py)
    faults_differ: bool = False  # its fault rate differed from its baseline's (doubts say how)
    # Why its numbers should not be trusted: recompiled (in steady state), load_differs,
    # faults_differ; a combined row's are its first doubted process's (``process`` names it).
    doubts: list[Point] = field(default_factory=list)
    baseline: str | None = None
    # Against the same mode and precision at the axes' baseline values (stats/axes.py); per
    # sample when the two differ in samples per step (a batch-size axis).
    axis_baseline: str | None = None
    axis_speedup: float | None = None
    axis_speedup_lo: float | None = None
    axis_speedup_hi: float | None = None
    axis_per_sample: bool = False
    breakeven_steps: int | None = None  # None with breakeven_never False: not computable
    breakeven_s: float | None = None
    breakeven_never: bool = False
    breakeven_lo: int | None = None  # range of the break-even step from the speedup's interval
    breakeven_hi: int | None = None  # None with breakeven_lo set: may never pay off
    peak_rss: int | None = None
    cuda_peak_allocated: int | None = None
    cuda_peak_reserved: int | None = None
    final_loss: float | None = None
    max_loss_diff: float | None = None  # vs the baseline, over the steps both ran
    loss_ref: str | None = None  # the run its losses are checked against (stats/agreement.py)
    loss_gap: float | None = None  # end-loss gap to loss_ref, as a share of loss_ref's first loss
    loss_ref_spread: float | None = None  # loss_ref's own swing over the same steps, same scale
    loss_nonfinite: int = 0  # steps whose loss was NaN or inf (recorded as null)
    common_steps: int = 0
    wall_s: float | None = None
    turns: int = 0  # interleaved schedule: turns it waited for (the first included)
    paused_s: float = 0.0  # time the user kept it paused (out of the probe stats too)
    error: str | None = None  # what it failed of, in words (the failed event's "what")
    failure_kind: str | None = None  # exception | oom-host | oom-cuda | signal | exit
    failure_tail: str | None = None  # its traceback, or for a crash its log's tail
    hung_s: float | None = None  # ended (stopped) while hung: seconds since its last step
    # From the probes, over the steady state (the whole run when it has none).
    cpu_mean: float | None = None  # % of one core, the runner's whole process tree
    cpu_max: float | None = None
    tree_rss_max: int | None = None
    children_max: int | None = None
    gpu_util_mean: float | None = None  # of the device(s) the run used
    vram_max: int | None = None  # NVML memory used on those devices (every process)
    gpu_proc_mem_max: int | None = None  # NVML memory of the run's own processes
    temp_max: float | None = None
    power_mean: float | None = None
    throttled_share: float | None = None  # share of samples with a non-benign throttle reason
    throttle_reasons: dict[str, int] = field(default_factory=dict)
    samples: int = 0
    warnings: list[str] = field(default_factory=list)
    # From the compile trace (compiled variants).
    compile_phases: dict[str, float] = field(default_factory=dict)  # fwd dynamo/aot/inductor/codegen, bwd
    graphs_fwd: int = 0
    graphs_bwd: int = 0
    graph_breaks: list[dict] = field(default_factory=list)  # {where, reason, hint, count}, most often first
    recompiles: int = 0
    recompile_reasons: list[str] = field(default_factory=list)
    fx_cache_hits: int = 0
    fx_cache_misses: int = 0
    # {failed, reason, frame, where, hints, validation?, count}: frames Dynamo could not compile (they
    # ran eager), the recompile limit, frames with no tensor op (stats/compiles.py)
    compile_failures: list[dict] = field(default_factory=list)
    fell_back: list[dict] = field(default_factory=list)  # training's frames run eager beside compiled ones
    # A script's validation passes (eval mode and no grad, or another loader; runner/script/
    # validation.py): their compiles, never counted, timed or ranked as training's (stats/compiles.py).
    val_compiles: int = 0
    val_compile_s: float | None = None
    val_recompiles: int = 0
    val_reasons: list[str] = field(default_factory=list)  # the guards that failed, torch's words
    val_guards: list[Point] = field(default_factory=list)  # ... by kind, each once: grad_mode, batch 8
    val_limit: bool = False  # a validation pass hit the recompile limit (it runs eager from then)
    uncompiled: str | None = None  # the runner's word: why this compiled variant compiles nothing
    nothing_compiled: Point | None = None  # a compiled variant that compiled nothing: why
    untimed: str | None = None  # a script whose training ran where tuimon does not hook: the line
    # Warm start (stats/warm.py, docs/compile.md#warm-start). A compiled run's start: cold (a
    # fresh, empty cache) | warm (seeded only from compile artifacts: ``seed``, a run or session)
    # | persistent (--cache-dir); a combined row has none, its ``starts`` split its processes.
    start: str | None = None
    seed: str | None = None
    # {fx: {hit, miss, bypass}, aot: {...}, kernels: C++ / Triton kernels compiled, kernel_s}
    cache: dict = field(default_factory=dict)
    # Its compile artifacts: kept (dir_bytes, files, bundle_bytes, path), seeded (kind, bytes,
    # files, seconds, seed), loaded (the bundle: bytes, entries, seconds); notes: one line each
    artifacts: dict = field(default_factory=dict)
    artifact_notes: list[str] = field(default_factory=list)
    # start -> {processes, compile_s, overhead_s, first_step_ms, phases, cache, breakeven_steps,
    # breakeven_s, breakeven_never}: cold and warm side by side (a run: its own start alone)
    starts: dict[str, dict] = field(default_factory=dict)
    miss_reasons: list[Point] = field(default_factory=list)  # why a warm start missed (cache_miss.py)
    cudagraphs: list[dict] = field(default_factory=list)  # torch's CUDA graph skips: {kind, text, count}
    # Profiler captures (``profile`` events, done or failed), in order; each gains
    # ``recorded_median_ms``: the median step time of the steps it recorded (from step events).
    profiles: list[dict] = field(default_factory=list)
    profiled_steps: int = 0  # steps a profiler recorded: out of the steady state and the overhead
    # A torchrun job (stats/ranks.py; None / empty for a single process): the job's step is its
    # slowest rank's; each rank's own row, the skew, stragglers and diverging compiles.
    world_size: int | None = None
    backend: str | None = None
    hosts: list[str] = field(default_factory=list)
    ranks: list[dict] = field(default_factory=list)  # RankStats as dicts, by rank
    skew_pct: float | None = None  # slowest rank's median own time vs the median rank's, %
    stragglers: list[dict] = field(default_factory=list)  # {rank, slower_pct, slower_ms, since, steps}
    compile_divergence: list[Point] = field(default_factory=list)  # stragglers.divergence
    # Where a steady step goes (stats/phases.py): data, forward, backward, optimizer, other ->
    # {median_ms, p10_ms, p90_ms, mean_ms, share (of the mean step), ci_lo, ci_hi; against its
    # eager baseline: speedup, speedup_lo, speedup_hi}; the phases its steps could not see.
    step_phases: dict[str, dict] = field(default_factory=dict)
    phases_missing: list[str] = field(default_factory=list)

    @property
    def label(self) -> str:
        """'default/fp32', or with axes 'default/fp32 · width=512' (as Variant.label)."""
        return f"{self.mode}/{self.precision}{axes_text(self.axes)}"

    @property
    def key(self) -> tuple:
        """What a variant is, across processes and sessions: mode, precision, axis values."""
        return (self.mode, self.precision, tuple(sorted(self.axes.items())))

    @property
    def compiled(self) -> bool:
        return self.mode != "eager"

    def distrust(self, why: Point) -> None:
        """One more reason its numbers should not be trusted (they add up)."""
        self.doubts.append(why)


@dataclass
class SessionSummary:
    runs: list[RunStats]
    unreadable_lines: int = 0
    gpu_available: bool | None = None  # None: no probe ran
    gpu_reason: str | None = None
    unsupported: list[str] = field(default_factory=list)  # GPU metrics that were n/a
    warnings: list[str] = field(default_factory=list)  # session-wide (host memory)
    variants: list[RunStats] = field(default_factory=list)  # --repeats: one combined row per variant
    quiet_only: bool = False  # --quiet-only: steps under other processes' load kept out
    pin_malloc: bool | None = None  # every run had the same glibc thresholds (None: not said)
    schedule: str | None = None  # interleave, sequential or parallel (None: not recorded)
    busy: Point | None = None  # every run stepped beside other processes' load (stats/load.py)
    # What the verdict weighs (session_started; `tuimon summary --horizon` may override them).
    axes: dict[str, list[str]] = field(default_factory=dict)  # --set axes; first value: baseline
    horizon: dict | None = None  # {"steps": N} or {"seconds": S}: how long the user will train
    loss_tolerance: float = LOSS_TOLERANCE
    sweep: bool = False  # a `tuimon sweep` session
    skipped: list[dict] = field(default_factory=list)  # {label, reason}: not run here
    budget: dict | None = None  # a sweep's --budget and how it was shared (cli/budget.py)
    start: str | None = None  # --start: the compile start the verdict weighs over the horizon
    cache_source: str | None = None  # --cache-from: the session the compiled runs started from
    wall_s: float | None = None  # from session_started to session_ended
    started_t: float | None = None  # session_started's time
    verdict: Any = None  # stats/verdict.py's Verdict: the answer, computed once with the summary
    noise: Any = None  # stats/noise.py's Noise: the spread between processes, measured or assumed
    plan: dict | None = None  # noise.session_plan: the least speedup it tells, processes for 10 %
    files: dict | None = None  # a script session's files kept apart (analysis/files.py)

    def to_dict(self) -> dict:
        return {"verdict": asdict(self.verdict) if self.verdict is not None else None,
                "noise": self.noise.to_dict() if self.noise is not None else None,
                "runs": [asdict(r) | {"label": r.label} for r in self.runs],
                "variants": [asdict(r) | {"label": r.label} for r in self.variants],
                **{k: getattr(self, k) for k in ("unreadable_lines", "gpu_available", "gpu_reason",
                                                 "unsupported", "warnings", "quiet_only", "pin_malloc",
                                                 "busy", "axes", "horizon", "loss_tolerance", "sweep",
                                                 "skipped", "budget", "wall_s", "plan", "start",
                                                 "cache_source", "files")}}


def mean_of(values: list) -> float | None:
    values = [v for v in values if v is not None]
    return statistics.fmean(values) if values else None


def max_of(values: list):
    values = [v for v in values if v is not None]
    return max(values) if values else None


def samples_per_step(r: RunStats) -> float | None:
    """Samples in a steady step (the median), when tuimon sees the batches; None otherwise."""
    if r.throughput_unit != "samples" or not r.throughput or not r.median_ms:
        return None
    return r.throughput * r.median_ms / 1000.0


def per_sample(rows: list[RunStats]) -> bool:
    """Whether rows must be compared per sample rather than per step: their steps hold
    different numbers of samples (an axis that changes the batch size)."""
    sizes = {round(n, 6) for n in map(samples_per_step, rows) if n}
    return len(sizes) > 1

def columns(summary: SessionSummary) -> list[RunStats]:
    """What the table compares: with --repeats a variant's processes as one combined column, and
    any run outside the rounds (a restart) on its own."""
    if not summary.variants:
        return summary.runs
    return summary.variants + [r for r in summary.runs if r.replicate is None]
