"""A row's statistics, one small frozen record per job (``RunStats``, rows.py, is their
composition; docs/layout.md lists them). None is "not measured", never zero. Each statistics
module returns its record; a later figure makes a new one (``dataclasses.replace``, ``evolve``)
and never grows a list or dict inside one, since a summary's rows share them. summary.json keeps
a row as these records nest it (report/summary.schema.json)."""

from __future__ import annotations

from dataclasses import dataclass, field, fields

from tuimon.analysis.stats.point import Point


@dataclass(frozen=True)
class Timing:
    """The step times (stats/steady_state.py)."""
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
    profiled_steps: int = 0  # steps a profiler recorded: out of the steady state and the overhead
    untimed: str | None = None  # a script whose training ran where tuimon does not hook: the line
    # Steps in a cycle whose mean step the figures are, when the steps alternate (cycles.py): 1
    cycle: int = 1
    gc_ms: float | None = None  # Python's garbage collector: ms it paused a steady step (mean)
    gc_per_100: float | None = None  # ... its collections per 100 steps (stats/gc_pauses.py)


@dataclass(frozen=True)
class Comparison:
    """Against its baseline (stats/compare.py) and its axes' baseline (stats/axes.py)."""
    speedup: float | None = None
    speedup_lo: float | None = None  # 95 % interval of the speedup
    speedup_hi: float | None = None
    within_noise: bool = False  # the interval contains 1.0
    untold: Point | None = None  # the interval too wide for its figure to mean anything (noise.untold)
    baseline: str | None = None
    # Against the same mode and precision at the axes' baseline values (stats/axes.py); per
    # sample when the two differ in samples per step (a batch-size axis).
    axis_baseline: str | None = None
    axis_speedup: float | None = None
    axis_speedup_lo: float | None = None
    axis_speedup_hi: float | None = None
    axis_untold: Point | None = None
    axis_per_sample: bool = False
    breakeven_steps: int | None = None  # None with breakeven_never False: not computable
    breakeven_s: float | None = None
    breakeven_never: bool = False
    breakeven_lo: int | None = None  # range of the break-even step from the speedup's interval
    breakeven_hi: int | None = None  # None with breakeven_lo set: may never pay off


@dataclass(frozen=True)
class Load:
    """What ran beside it (stats/load.py, stats/faults.py)."""
    # Steps that met the session's other runs' load (stats/load.py): {steps, cores, dropped, share}
    own_load: dict | None = None
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


@dataclass(frozen=True)
class Losses:
    """Its losses, and against the run they are checked against (stats/compare.py, agreement.py)."""
    loss_comparable: bool | None = None  # same first loss as its baseline (None: unknown)
    loss_apart: str | None = None  # why not: unseeded | random ops | unknown (stats/compare.py)
    final_loss: float | None = None
    max_loss_diff: float | None = None  # vs the baseline, over the steps both ran
    loss_ref: str | None = None  # the run its losses are checked against (stats/agreement.py)
    loss_gap: float | None = None  # end-loss gap to loss_ref, as a share of loss_ref's first loss
    loss_ref_spread: float | None = None  # loss_ref's own swing over the same steps, same scale
    loss_nonfinite: int = 0  # steps whose loss was NaN or inf (recorded as null)
    common_steps: int = 0


@dataclass(frozen=True)
class Probes:
    """From the probes, over the steady state (the whole run when it has none; stats/probes.py),
    and the runner's own memory peaks (``memory`` events)."""
    peak_rss: int | None = None
    cuda_peak_allocated: int | None = None
    cuda_peak_reserved: int | None = None
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


@dataclass(frozen=True)
class Failure:
    error: str | None = None  # what it failed of, in words (the failed event's "what")
    failure_kind: str | None = None  # exception | oom-host | oom-cuda | signal | exit
    failure_tail: str | None = None  # its traceback, or for a crash its log's tail
    hung_s: float | None = None  # ended (stopped) while hung: seconds since its last step


@dataclass(frozen=True)
class Compiles:
    """From the compile trace (compiled variants; stats/compiles.py)."""
    compile_s: float | None = None
    compiles: int = 0
    compile_phases: dict[str, float] = field(default_factory=dict)  # fwd dynamo/aot/inductor/codegen, bwd
    graphs_fwd: int = 0
    graphs_bwd: int = 0
    graph_breaks: list[dict] = field(default_factory=list)  # {where, reason, hint, count}, most often first
    recompiles: int = 0
    recompile_s: float = 0.0  # the compile time of the recompiles (compile ids "N/1" on)
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
    cudagraphs: list[dict] = field(default_factory=list)  # torch's CUDA graph skips: {kind, text, count}


@dataclass(frozen=True)
class Warm:
    """Warm start (stats/warm.py, docs/compile.md#warm-start). A compiled run's start: cold (a
    fresh, empty cache) | warm (seeded only from compile artifacts: ``seed``, a run or session)
    | persistent (--cache-dir); a combined row has none, its ``starts`` split its processes."""
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


@dataclass(frozen=True)
class Job:
    """A torchrun job (stats/ranks.py; None / empty for a single process): the job's step is its
    slowest rank's; each rank's own row, the skew, stragglers and diverging compiles."""
    world_size: int | None = None
    backend: str | None = None
    hosts: list[str] = field(default_factory=list)
    ranks: list[dict] = field(default_factory=list)  # RankStats as dicts, by rank
    skew_pct: float | None = None  # slowest rank's median own time vs the median rank's, %
    stragglers: list[dict] = field(default_factory=list)  # {rank, slower_pct, slower_ms, since, steps}
    compile_divergence: list[Point] = field(default_factory=list)  # stragglers.divergence


@dataclass(frozen=True)
class Phases:
    """Where a steady step goes (stats/phases.py): data, forward, backward, optimizer, other ->
    {median_ms, p10_ms, p90_ms, mean_ms, share (of the mean step), ci_lo, ci_hi; against its
    eager baseline: speedup, speedup_lo, speedup_hi}; the phases its steps could not see."""
    step_phases: dict[str, dict] = field(default_factory=dict)
    phases_missing: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Memory:
    """Memory per phase on CUDA (stats/memory.py, docs/measuring.md#memory-per-phase): the
    allocator's peak in each part of a step, bytes, on the steps the runner measured. None is
    "not measured"; ``mem_na`` says why there is nothing (cpu: n/a, RSS stands; short: too few
    steps; unread: no memory step in the events)."""
    # phase -> {peak, end (allocated as it ended), vs_baseline (bytes, + more, - less), change:
    # saved | added | same (against its baseline's same phase; absent: no baseline figure)}
    mem_phases: dict[str, dict] = field(default_factory=dict)
    mem_base: int | None = None  # allocated as the step began: weights, optimizer state, ...
    mem_budget: int | None = None  # what the process could hold: its reserved + the device's free
    mem_total: int | None = None  # the device's
    mem_baseline: str | None = None  # the run its phases are set against
    graph_pool: int | None = None  # bytes torch's CUDA-graph pool reserves (0: none)
    graph_pool_used: int | None = None
    graph_pool_unread: str | None = None  # why the pool cannot be told (torch's words)
    batch_fit: float | None = None  # the largest batch that would fit, × today's (rounded down)
    batch_fit_why: Point | None = None  # why it cannot be told (stats/memory.py's codes)
    mem_na: str | None = None


@dataclass(frozen=True)
class Energy:
    """Energy where the machine tells it (stats/energy.py, docs/measuring.md#energy): NVML's
    counter on a GPU (or its power × time), RAPL on a CPU. Only what ran while the run stepped
    alone is its own; ``energy_why`` says why a figure cannot be told."""
    energy_source: str | None = None  # nvml-counter | nvml-power | rapl
    joules_per_step: float | None = None  # over its steady steps that ran alone
    energy_steps: int = 0  # the steps that figure rests on
    energy_s: float | None = None  # ... and their seconds
    joules_run: float | None = None  # its whole life (build, compiles), when alone throughout
    energy_why: Point | None = None  # n/a or cannot tell: the code (and its figures)


@dataclass(frozen=True)
class PhaseFlops:
    """The FLOPs of a step, or of one of its phases, the FLOP/s they achieved at its median time,
    and its MFU against each peak (a fraction, 1.0 = 100 %)."""
    flops: int | None = None
    flop_s: float | None = None
    mfu_measured: float | None = None
    mfu_datasheet: float | None = None


@dataclass(frozen=True)
class Flops:
    """FLOPs of a step and of its phases, the FLOP/s they achieved at the phase medians, and MFU
    against two peaks (stats/flops.py; docs/measuring.md#flops-peaks-and-mfu). FLOPs are torch's
    FlopCounterMode's on one extra step of the eager module (a compiled variant's too); FLOP/s
    and peaks in FLOP/s; None where a figure is missing."""
    step: PhaseFlops = field(default_factory=PhaseFlops)  # forward + backward + optimizer
    # forward, backward, optimizer (whose flops are None: no optimizer seen; 0: nothing with a
    # FLOP formula); empty: nothing counted
    phases: dict[str, PhaseFlops] = field(default_factory=dict)
    precision: str | None = None  # what most FLOPs ran in: fp32 | tf32 | bf16 | fp16 | fp8
    calls: int | None = None  # the module's training calls a step (each counted)
    backed: int | None = None  # ... of them a backward reached (the others: forwards alone)
    # Modules other optimizers train outside the counted one: their FLOPs are not in the count,
    # so no FLOP/s or MFU is worked out from it
    uncounted: tuple[str, ...] = ()
    # The models a script trains one after another (a teacher, then students): the count is the
    # first's, so again no FLOP/s or MFU
    trainings: tuple[str, ...] = ()
    counted_on: str | None = None  # "eager": the module without its compiled wrapper
    ops: dict = field(default_factory=dict)  # the top ops {op: FLOPs a step}
    error: str | None = None  # why nothing was counted (the runner's words)
    peak_measured: float | None = None  # this machine's GEMM best at ``precision``
    peak_measured_key: str | None = None  # host | device | torch (runner/peak_bench.py)
    peak_measured_error: str | None = None
    peak_datasheet: float | None = None  # the device's dense peak at ``precision`` (tuimon/peaks.py)
    peak_device: str | None = None  # the device as the table names it
    # What the table said: found | unknown-device | no-precision | no-precision-known | cpu
    peak_lookup: str | None = None
    # The peaks MFU stands on: both | measured-cpu | measured-unknown-device |
    # measured-no-precision | datasheet | None (no peak: no MFU)
    mfu_basis: str | None = None
    # "PART:PEAK" of each MFU over 100 % (step:measured, forward:datasheet, ...): a peak that is
    # wrong for this run, never a fact
    mfu_over: tuple[str, ...] = ()

    @property
    def counted(self) -> bool:
        return self.step.flops is not None

    def part(self, name: str) -> PhaseFlops:
        """The step's figures (``step``) or one phase's (none counted: an empty record)."""
        return self.step if name == "step" else self.phases.get(name, PhaseFlops())


# RunStats' groups, by attribute name.
GROUPS = {"timing": Timing, "compare": Comparison, "load": Load, "loss": Losses, "probes": Probes,
          "failure": Failure, "compile": Compiles, "warm": Warm, "job": Job, "phases": Phases,
          "memory": Memory, "energy": Energy, "flops": Flops}

_NAMES: dict[type, frozenset[str]] = {}


def evolve(record, **changes):
    """``dataclasses.replace`` for the live fold (apply.py, warm.py), which makes a new record
    at every compile event: the same fields with ``changes``, without running ``__init__`` again
    (a frozen record's sets each field through ``object.__setattr__``: ~4 µs for Compiles' 25,
    more than the rest of the event's folding)."""
    kind = type(record)
    names = _NAMES.get(kind) or _NAMES.setdefault(kind, frozenset(f.name for f in fields(kind)))
    if not changes.keys() <= names:
        raise TypeError(f"{kind.__name__} has no field {', '.join(sorted(changes.keys() - names))}")
    new = object.__new__(kind)
    new.__dict__.update(record.__dict__, **changes)
    return new
