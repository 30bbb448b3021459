"""The rows every reader shows: one ``RunStats`` per run (and per combined variant), gathered in
a ``SessionSummary``; and the None-skipping aggregates that fill them (None is "not measured",
never zero)."""

from __future__ import annotations

import statistics
from dataclasses import asdict, dataclass, field
from typing import Any

from tuimon.analysis.stats.anatomy import Anatomy
from tuimon.analysis.stats.point import Point, plain
from tuimon.analysis.stats.records import (
    Comparison,
    Compiles,
    Energy,
    Failure,
    Flops,
    Job,
    Load,
    Losses,
    Memory,
    Phases,
    Probes,
    Timing,
    Warm,
)
from tuimon.axes import text as axes_text

# A variant whose losses end further than this from its reference's (as a share of the
# reference's first loss) is disqualified by the verdict (--loss-tolerance).
LOSS_TOLERANCE = 0.05


@dataclass
class RunStats:
    """A run's row: what it is and what happened to it, and its statistics one record per job
    (records.py). summary.json keeps it as its records nest it (``to_dict``)."""
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
    # tuimon try's fixes, as the child applied them (run_started): {name: {applied, text}}
    fixes: dict[str, dict] = field(default_factory=dict)
    # Its compiled model's repeated block, as the child found it (a note's ``repeated``: model,
    # block, count; count 0: none); None: not said (eager, an older session). regional needs one.
    repeated: dict | None = None
    warnings: list[str] = field(default_factory=list)
    wall_s: float | None = None
    turns: int = 0  # interleaved schedule: turns it waited for (the first included)
    paused_s: float = 0.0  # time the user kept it paused (out of the probe stats too)
    # Why its numbers should not be trusted: recompiled (in steady state), load_differs,
    # faults_differ; a combined row's are its first doubted process's (``process`` names it).
    doubts: list[Point] = field(default_factory=list)
    # Profiler captures (``profile`` events, done or failed), in order; each gains
    # ``recorded_median_ms``: the median step time of the steps it recorded (from step events).
    profiles: list[dict] = field(default_factory=list)
    timing: Timing = field(default_factory=Timing)
    compare: Comparison = field(default_factory=Comparison)
    load: Load = field(default_factory=Load)
    loss: Losses = field(default_factory=Losses)
    probes: Probes = field(default_factory=Probes)
    failure: Failure = field(default_factory=Failure)
    compile: Compiles = field(default_factory=Compiles)
    warm: Warm = field(default_factory=Warm)
    job: Job = field(default_factory=Job)
    phases: Phases = field(default_factory=Phases)
    memory: Memory = field(default_factory=Memory)
    energy: Energy = field(default_factory=Energy)
    flops: Flops = field(default_factory=Flops)
    anatomy: Anatomy = field(default_factory=Anatomy)  # how a script's loop was read (anatomy.py)

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

    def to_dict(self) -> dict:
        """summary.json's row: its run and label, then its fields and records as they nest."""
        return {"run": self.run, "label": self.label, **plain(self)}


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
    cache_auto: bool = False  # ... chosen by default: the last session of this code and settings
    wall_s: float | None = None  # from session_started to session_ended
    started_t: float | None = None  # session_started's time
    verdict: Any = None  # stats/verdict.py's Verdict: the answer, computed once with the summary
    noise: Any = None  # stats/noise.py's Noise: the spread between processes, measured or assumed
    plan: dict | None = None  # noise.session_plan: the least speedup it tells, processes for 10 %
    files: dict | None = None  # a script session's files kept apart (analysis/files.py)
    # --until-known: its design and budget (session_started), and how far its answer is or why it
    # stopped (stats/known.py's Known: the supervisor's latest word, then the summary's own)
    until_known: dict | None = None
    known: Any = None

    def to_dict(self) -> dict:
        return {"verdict": asdict(self.verdict) if self.verdict is not None else None,
                "noise": self.noise.to_dict() if self.noise is not None else None,
                "runs": [r.to_dict() for r in self.runs],
                "variants": [r.to_dict() for r in self.variants],
                "known": self.known.to_dict() if self.known is not None else None,
                **{k: getattr(self, k) for k in ("unreadable_lines", "gpu_available", "gpu_reason",
                                                 "unsupported", "warnings", "quiet_only", "pin_malloc",
                                                 "busy", "axes", "horizon", "loss_tolerance", "sweep",
                                                 "skipped", "budget", "wall_s", "plan", "start",
                                                 "cache_source", "cache_auto", "files",
                                                 "until_known")}}


def mean_of(values: list) -> float | None:
    values = [v for v in values if v is not None]
    return statistics.fmean(values) if values else None


def max_of(values: list):
    values = [v for v in values if v is not None]
    return max(values) if values else None


def samples_per_step(r: RunStats) -> float | None:
    """Samples in a steady step (the median), when tuimon sees the batches; None otherwise."""
    if r.timing.throughput_unit != "samples" or not r.timing.throughput or not r.timing.median_ms:
        return None
    return r.timing.throughput * r.timing.median_ms / 1000.0


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
