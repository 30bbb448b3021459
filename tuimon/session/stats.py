"""Every statistic tuimon reports, computed in one place from a session's events.

The UI and the exporters call ``summarize``; none of them recomputes a number.

Definitions:
- measured steps: steps past warm-up in which no compile ran (a recompile is kept apart too);
- warm-up overhead: time of the steps kept apart minus what they would have cost at the
  steady-state median;
- speedup: eager median / variant median, against the eager run of the same precision (with
  --repeats, the eager run of the same round);
- a variant run in several processes (--repeats K): its row combines them. Median: the geometric
  mean of the processes' medians; interval: Student's t over the K log-medians, so it covers the
  process-to-process spread (a fresh process can land ~1.5x slower on a VM) that one process's
  step-to-step interval cannot see; it is never narrower than the processes' own intervals allow;
- break-even: the step at which the variant's total time drops below eager's, i.e.
  (overhead_variant - overhead_eager) / (median_eager - median_variant); "never" when the
  variant is not faster per step.
"""

from __future__ import annotations

import math
import statistics
from collections import deque
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from tuimon import events
from tuimon.probes.alerts import BENIGN_REASONS


@dataclass
class RunStats:
    run: str
    mode: str
    precision: str
    status: str = "queued"  # queued | running | done | stopped | failed
    replicate: int | None = None  # --repeats: which of the variant's processes (1..K)
    processes: list[dict] = field(default_factory=list)  # a combined row: {run, median_ms} each
    device: str | None = None
    device_name: str | None = None
    params: int | None = None
    batch_size: int | None = None
    notes: list[str] = field(default_factory=list)
    steps: int = 0
    measured: int = 0
    median_ms: float | None = None
    p10_ms: float | None = None
    p90_ms: float | None = None
    mean_data_ms: float | None = None
    throughput: float | None = None  # samples per second at the median step
    first_step_ms: float | None = None
    warmup_steps: int = 0
    warmup_auto: bool = True  # warm-up found in the data (MSER-5) rather than fixed
    steady_from: int | None = None  # index of the first steady-state step
    median_ci_lo: float | None = None  # 95 % interval of the median step (ms)
    median_ci_hi: float | None = None
    log_se: float | None = None  # a combined row: standard error of its log median
    autocorr: float | None = None  # lag-1 autocorrelation of the steady step times
    overhead_s: float | None = None
    compile_s: float | None = None
    compiles: int = 0
    speedup: float | None = None
    speedup_lo: float | None = None  # 95 % interval of the speedup
    speedup_hi: float | None = None
    within_noise: bool = False  # the interval contains 1.0
    unreliable: str | None = None  # why the numbers should not be trusted (recompiles in steady state)
    baseline: str | None = None
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
    graph_breaks: list[dict] = field(default_factory=list)  # {where, reason, count}, most frequent first
    recompiles: int = 0
    recompile_reasons: list[str] = field(default_factory=list)
    fx_cache_hits: int = 0
    fx_cache_misses: int = 0
    # Profiler captures (``profile`` events, done or failed), in order; each gains
    # ``recorded_median_ms``: the median step time of the steps it recorded (from step events).
    profiles: list[dict] = field(default_factory=list)
    profiled_steps: int = 0  # steps a profiler recorded: out of the steady state and the overhead

    @property
    def label(self) -> str:
        return f"{self.mode}/{self.precision}"

    @property
    def compiled(self) -> bool:
        return self.mode != "eager"


@dataclass
class SessionSummary:
    runs: list[RunStats]
    unreadable_lines: int = 0
    gpu_available: bool | None = None  # None: no probe ran
    gpu_reason: str | None = None
    unsupported: list[str] = field(default_factory=list)  # GPU metrics that were n/a
    warnings: list[str] = field(default_factory=list)  # session-wide (host memory)
    variants: list[RunStats] = field(default_factory=list)  # --repeats: one combined row per variant

    def to_dict(self) -> dict:
        return {"runs": [asdict(r) | {"label": r.label} for r in self.runs],
                "variants": [asdict(r) | {"label": r.label} for r in self.variants],
                **{k: getattr(self, k) for k in ("unreadable_lines", "gpu_available", "gpu_reason",
                                                 "unsupported", "warnings")}}


def percentile(sorted_values: list[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default), on a sorted list."""
    if not sorted_values:
        raise ValueError("no values")
    pos = (len(sorted_values) - 1) * q
    lo, hi = math.floor(pos), math.ceil(pos)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def is_measured(step: dict) -> bool:
    return step.get("phase") == "steady" and not step.get("compile_ms") and not step.get("profiled")


def summarize(session_events: list[dict], unreadable_lines: int = 0) -> SessionSummary:
    """Every statistic of a whole session (the exports: every step is kept)."""
    collector = Collector(unreadable_lines=unreadable_lines)
    collector.extend(session_events)
    return collector.summary()


class Collector:
    """Folds events one at a time; ``summary()`` computes every statistic from what it holds.

    ``keep_steps=None`` keeps every step. With a number (the live UI) it keeps each run's
    kept-apart steps (warm-up, compiles: few, and needed for overheads), its first ``HEAD``
    steps (where warm-up is detected) and its last ``keep_steps`` measured steps, so memory
    stays bounded however long a session runs; the step counts stay exact, medians are then
    over the head past warm-up and the recent window.
    """

    def __init__(self, keep_steps: int | None = None, keep_samples: int | None = None,
                 unreadable_lines: int = 0) -> None:
        self.keep_steps = keep_steps
        self.runs: dict[str, RunStats] = {}
        self._apart: dict[str, list[dict]] = {}
        self._measured: dict[str, deque] = {}
        self._counts: dict[str, list[int]] = {}  # run -> [steps, measured]
        self._pauses: dict[str, list[list]] = {}  # run -> [[paused at, resumed at or None], ...]
        self._loss: dict[str, LossTrack] = {}
        self._hung: dict[str, float] = {}  # run -> t of its hang warning, until a later step
        self._last_t: dict[str, float] = {}  # run -> t of its last step
        self._samples: deque = deque(maxlen=keep_samples)
        self._session = SessionSummary([], unreadable_lines=unreadable_lines)

    def extend(self, evs) -> None:
        for e in evs:
            self.add(e)

    def add(self, e: dict) -> None:
        if e["type"] == events.SAMPLE:
            self._samples.append(e)
            return
        if e["type"] == events.CONTROL:
            return  # what the user asked; the runs' own events say what it changed
        run = e.get("run")
        if run is None:
            _apply_session(self._session, e)
            return
        r = self.runs.get(run)
        if r is None:
            r = self.runs[run] = RunStats(run, e.get("mode", "?"), e.get("precision", "?"))
            self._apart[run], self._measured[run] = [], deque(maxlen=self.keep_steps)
            self._counts[run] = [0, 0]
            self._pauses[run] = []
            self._loss[run] = LossTrack(None if self.keep_steps is None else self.keep_steps)
        if e["type"] == events.STEP:
            # A step that ended after the warning: not stuck after all (steps sent late, at
            # the stop, ended before it).
            if e.get("t", 0.0) > self._hung.get(run, float("inf")):
                del self._hung[run]
            self._last_t[run] = max(self._last_t.get(run, 0.0), e.get("t", 0.0))
            self._loss[run].add(e["i"], e.get("loss"))
            counts = self._counts[run]
            counts[0] += 1
            if is_measured(e):
                counts[1] += 1
                # The first HEAD measured steps stay: warm-up detection looks at them.
                if self.keep_steps is not None and counts[1] <= HEAD:
                    self._apart[run].append(e)
                else:
                    self._measured[run].append(e)
            else:
                self._apart[run].append(e)
        else:
            if e["type"] == events.WARNING and e.get("hung"):
                self._hung[run] = e["t"]
            elif e["type"] == events.FINISHED and run in self._hung and e.get("reason") == "stopped":
                r.hung_s = round(e["t"] - self._last_t.get(run, self._hung[run]), 1)  # say so
            _apply(r, e)
            _track_pause(self._pauses[run], e)

    def steps(self, run: str) -> list[dict]:
        """The steps held for a run, in order."""
        apart, measured = self._apart[run], self._measured[run]
        if not apart or not measured or apart[-1]["i"] < measured[0]["i"]:
            return apart + list(measured)
        return sorted(apart + list(measured), key=lambda s: s["i"])

    def summary(self) -> SessionSummary:
        runs = {run: replace(r, notes=list(r.notes), warnings=list(r.warnings),
                             compile_phases=dict(r.compile_phases),
                             graph_breaks=sorted((dict(b) for b in r.graph_breaks),
                                                 key=lambda b: -b["count"]),
                             recompile_reasons=list(r.recompile_reasons),
                             profiles=[dict(p) for p in r.profiles])
                for run, r in self.runs.items()}
        steps = {run: self.steps(run) for run in runs}
        for run, r in runs.items():
            _step_stats(r, steps[run], *self._counts[run])
            _profile_stats(r, steps[run])
            r.paused_s = round(sum(b - a for a, b in self._pauses[run] if b is not None), 3)
        samples = list(self._samples)
        losses = {run: track.points for run, track in self._loss.items()}
        for r in runs.values():
            _compare(r, runs, losses)
            _probe_stats(r, steps[r.run], samples, self._pauses[r.run])
        variants = combine_replicates(list(runs.values()))
        for v in variants.values():
            losses[v.run] = losses[v.processes[0]["run"]]  # the first process's losses speak for it
        for v in variants.values():
            _compare(v, variants, losses)
        return replace(self._session, runs=list(runs.values()), variants=list(variants.values()),
                       unsupported=list(self._session.unsupported),
                       warnings=list(self._session.warnings))


class LossTrack:
    """Losses by step index, for comparing runs step by step.

    Unbounded: every step. Bounded to ``cap`` points: only steps at multiples of a stride that
    doubles whenever the track fills, so every run keeps the *same* indices (they stay
    comparable even when one run is far ahead of another) in bounded memory.
    """

    def __init__(self, cap: int | None) -> None:
        self.cap = cap
        self.stride = 1
        self.points: dict[int, float] = {}

    def add(self, i: int, loss: float | None) -> None:
        if loss is None or i % self.stride:
            return
        self.points[i] = loss
        if self.cap is not None and len(self.points) > self.cap:
            self.stride *= 2
            self.points = {k: v for k, v in self.points.items() if k % self.stride == 0}


def _apply_session(summary: SessionSummary, e: dict) -> None:
    if e["type"] == events.PROBE_INFO:
        if "gpu_available" in e:
            summary.gpu_available, summary.gpu_reason = e["gpu_available"], e.get("reason")
        summary.unsupported += [m for m in e.get("unsupported", []) if m not in summary.unsupported]
    elif e["type"] == events.WARNING and e.get("text") not in summary.warnings:
        summary.warnings.append(e.get("text"))


def _apply(r: RunStats, e: dict) -> None:
    kind = e["type"]
    if kind == events.RUN_QUEUED:
        r.replicate = e.get("replicate")
    elif kind == events.RUN_STARTED:
        r.status = "running"
        for key in ("mode", "precision", "device", "device_name", "params", "batch_size"):
            if e.get(key) is not None:
                setattr(r, key, e[key])
        r.warmup_auto = str(e.get("warmup", "auto")) == "auto"
        r.notes = list(e.get("notes") or [])
    elif kind == events.MEMORY:
        for key in ("peak_rss", "cuda_peak_allocated", "cuda_peak_reserved"):
            if e.get(key) is not None:
                setattr(r, key, max(getattr(r, key) or 0, e[key]))
    elif kind == events.FINISHED:
        r.status = "stopped" if e.get("reason") == "stopped" else "done"
        r.compiles = e.get("compiles", r.compiles)
        if e.get("compile_s") is not None and r.compiled:
            r.compile_s = e["compile_s"]
    elif kind == events.FAILED:
        r.status = "failed"
        r.error = e.get("what") or f"{e.get('error', 'Error')}: {e.get('message', '')}".rstrip(": ")
        r.failure_kind = e.get("kind") or ("exception" if e.get("stage") != "crash" else None)
        r.failure_tail = e.get("traceback") or None
    elif kind == events.RUN_EXITED:
        r.wall_s = e.get("seconds")
    elif kind == events.PHASE and r.status == "queued":
        r.status = "running"
    if kind == events.PHASE and e.get("turn"):
        r.turns += 1
    elif kind == events.WARNING and e.get("text") not in r.warnings:
        r.warnings.append(e.get("text"))
    elif kind == events.COMPILE:
        _apply_compile(r, e)
    elif kind == events.GRAPH_BREAK:
        where = f"{Path(e['file']).name}:{e.get('line')}" if e.get("file") else "?"
        known = next((b for b in r.graph_breaks if b["where"] == where and b["reason"] == e.get("reason")),
                     None)
        if known is None:
            r.graph_breaks.append({"where": where, "reason": e.get("reason") or "", "count": 1})
        else:
            known["count"] += 1
    elif kind == events.RECOMPILE:
        r.recompiles += 1
        for reason in e.get("reasons") or []:
            if reason not in r.recompile_reasons:
                r.recompile_reasons.append(reason)

    elif kind == events.PROFILE and e.get("state") in ("done", "failed") and e.get("capture"):
        r.profiles.append({k: v for k, v in e.items() if k not in ("type", "run")})

def _apply_compile(r: RunStats, e: dict) -> None:
    forward = e.get("forward", True)
    if forward:
        r.graphs_fwd += 1
        for phase, seconds in (e.get("phases") or {}).items():
            r.compile_phases[phase] = r.compile_phases.get(phase, 0.0) + (seconds or 0.0)
    else:
        r.graphs_bwd += 1
        r.compile_phases["backward"] = r.compile_phases.get("backward", 0.0) + (e.get("seconds") or 0.0)
    r.fx_cache_hits += e.get("fx_cache_hits") or 0
    r.fx_cache_misses += e.get("fx_cache_misses") or 0


def _track_pause(windows: list[list], e: dict) -> None:
    paused = e["type"] == events.PHASE and e.get("phase") == "paused"
    open_ = bool(windows) and windows[-1][1] is None
    if paused and not open_:
        windows.append([e["t"], None])
    elif open_ and not paused and e["type"] in (events.PHASE, events.FINISHED, events.FAILED,
                                                 events.RUN_EXITED):
        windows[-1][1] = e["t"]


def _step_stats(r: RunStats, run_steps: list[dict], total: int, measured_total: int) -> None:
    r.steps = total
    if not run_steps:
        return
    r.first_step_ms = run_steps[0]["ms"]
    if r.compiled and r.compile_s is None:
        total = sum(s.get("compile_ms", 0.0) for s in run_steps) / 1000.0
        r.compile_s = round(total, 3) if total else None
    losses = [s.get("loss") for s in run_steps]
    r.final_loss = next((x for x in reversed(losses) if x is not None), None)
    candidates = [s for s in run_steps if is_measured(s)]  # in step order
    cut = mser5([s["ms"] for s in candidates[:HEAD]]) if r.warmup_auto else 0
    steady = candidates[cut:]
    r.measured = measured_total - cut
    r.warmup_steps = r.steps - r.measured
    if not steady:
        return
    r.steady_from = steady[0]["i"]
    in_order = [s["ms"] for s in steady]
    measured = sorted(in_order)
    r.median_ms = statistics.median(measured)
    r.p10_ms = percentile(measured, 0.10)
    r.p90_ms = percentile(measured, 0.90)
    r.autocorr = lag1_autocorr(in_order)
    r.median_ci_lo, r.median_ci_hi = median_interval(measured, r.autocorr)
    r.mean_data_ms = statistics.fmean(s.get("data_ms", 0.0) for s in steady)
    samples = statistics.median(s.get("n", 0) for s in steady)
    r.throughput = samples / (r.median_ms / 1000.0) if r.median_ms > 0 else None
    # A profiled step is slow because of the profiler, not warm-up (unless it compiled too).
    kept_apart = [s["ms"] for s in run_steps
                  if not is_measured(s) and (s.get("compile_ms") or not s.get("profiled"))]
    kept_apart += [s["ms"] for s in candidates[:cut]]
    r.overhead_s = max(0.0, (sum(kept_apart) - len(kept_apart) * r.median_ms) / 1000.0)
    late = [s for s in run_steps if s.get("compile_ms") and s["i"] > r.steady_from]
    if late:
        r.unreliable = (f"{len(late)} step(s) recompiled after warm-up (first at step {late[0]['i']}): "
                        "shapes or guards keep changing")


HEAD = 2000  # warm-up is looked for among the first steps only (MSER cuts at most half of them)
Z95 = 1.959964


def mser5(series: list[float]) -> int:
    """Warm-up length by MSER-5 (White, 1997): cut where the remaining batch means (of 5 steps)
    have the smallest squared standard error; at most half the series. O(n)."""
    b = 5
    k = len(series) // b
    if k < 4:
        return 0
    means = [statistics.fmean(series[i * b:(i + 1) * b]) for i in range(k)]
    s1 = s2 = 0.0
    suffix = []
    for x in reversed(means):
        s1 += x
        s2 += x * x
        suffix.append((s1, s2))
    suffix.reverse()
    best_d, best = 0, math.inf
    for d in range(k // 2 + 1):
        n = k - d
        t1, t2 = suffix[d]
        score = max(0.0, t2 - t1 * t1 / n) / (n * n)
        if score < best:
            best_d, best = d, score
    if best_d >= k // 2 - 1:
        return 0  # the minimum sits at the limit: no settling, just a noisier start (nonstationary)
    return best_d * b


def lag1_autocorr(xs: list[float]) -> float:
    if len(xs) < 3:
        return 0.0
    m = statistics.fmean(xs)
    den = sum((x - m) ** 2 for x in xs)
    if den == 0:
        return 0.0
    return sum((a - m) * (b - m) for a, b in zip(xs, xs[1:], strict=False)) / den


def median_interval(sorted_ms: list[float], rho: float) -> tuple[float, float]:
    """Distribution-free 95 % interval of the median from order statistics, widened for
    correlated neighbours: the effective sample size is n(1-rho)/(1+rho) (the AR(1) rule)."""
    n = len(sorted_ms)
    rho = min(max(rho, 0.0), 0.99)
    n_eff = max(1.0, n * (1 - rho) / (1 + rho))
    half = Z95 * n / (2 * math.sqrt(n_eff))  # in ranks
    lo = max(0, math.floor(n / 2 - half))
    hi = min(n - 1, math.ceil(n / 2 + half) - 1)
    return sorted_ms[lo], sorted_ms[max(lo, hi)]


def _log_se(r: RunStats) -> float | None:
    if r.processes:
        return r.log_se
    if not r.median_ci_lo or not r.median_ci_hi or r.median_ci_lo <= 0:
        return None
    return (math.log(r.median_ci_hi) - math.log(r.median_ci_lo)) / (2 * Z95)


# Two-sided 95 % quantiles of Student's t by degrees of freedom (1..30); Z95 beyond.
T95 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
       2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
       2.052, 2.048, 2.045, 2.042)


def t95(df: float) -> float:
    """The 97.5 % quantile of Student's t; a fractional df rounds down (wider, the safe side).
    Past the table, the first Cornish-Fisher term (2.021 at 40, 2.000 at 60: within 0.002)."""
    k = max(int(df), 1)
    return T95[k - 1] if k <= len(T95) else Z95 + (Z95 ** 3 + Z95) / (4 * k)


def _measured_processes(r: RunStats) -> int:
    return sum(1 for p in r.processes if p["median_ms"])


def welch_df(se_a: float, df_a: int, se_b: float, df_b: int) -> float:
    """Welch–Satterthwaite degrees of freedom of a difference of two means."""
    va, vb = se_a ** 2, se_b ** 2
    den = (va * va / df_a if df_a > 0 else 0.0) + (vb * vb / df_b if df_b > 0 else 0.0)
    return (va + vb) ** 2 / den if den > 0 else float(max(df_a, df_b, 1))


def combine_replicates(runs: list[RunStats]) -> dict[str, RunStats]:
    """One row per variant run in several processes (--repeats), keyed like a run id."""
    groups: dict[tuple[str, str], list[RunStats]] = {}
    for r in runs:
        if r.replicate is not None:
            groups.setdefault((r.mode, r.precision), []).append(r)
    return {row.run: row for row in (_combined(g) for g in groups.values())}


def _combined(group: list[RunStats]) -> RunStats:
    first = group[0]
    k = len(group)
    row = RunStats(f"{first.mode}-{first.precision}×{k}", first.mode, first.precision)
    row.processes = [{"run": r.run, "median_ms": r.median_ms, "status": r.status} for r in group]
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
    row.graphs_fwd, row.graphs_bwd = first.graphs_fwd, first.graphs_bwd
    row.fx_cache_hits = sum(r.fx_cache_hits for r in group)
    row.fx_cache_misses = sum(r.fx_cache_misses for r in group)
    for key in ("compile_s", "overhead_s", "first_step_ms", "mean_data_ms", "cpu_mean",
                "gpu_util_mean", "power_mean", "throttled_share"):
        values = [getattr(r, key) for r in group if getattr(r, key) is not None]
        setattr(row, key, statistics.median(values) if values else None)
    for key in ("peak_rss", "cuda_peak_allocated", "cuda_peak_reserved", "cpu_max", "tree_rss_max",
                "children_max", "vram_max", "gpu_proc_mem_max", "temp_max"):
        setattr(row, key, _max([getattr(r, key) for r in group]))
    row.samples = sum(r.samples for r in group)
    row.final_loss = first.final_loss
    measured = [r for r in group if r.median_ms]
    if not measured:
        return row
    logs = [math.log(r.median_ms) for r in measured]
    n = len(logs)
    centre = statistics.fmean(logs)
    row.median_ms = math.exp(centre)
    row.p10_ms = statistics.median(r.p10_ms for r in measured)
    row.p90_ms = statistics.median(r.p90_ms for r in measured)
    throughputs = [r.throughput for r in measured if r.throughput]
    row.throughput = statistics.median(throughputs) if throughputs else None
    if n < 2:
        return row
    # The spread between processes, but never less than their own step noise allows (with two or
    # three processes the sample spread can come out near zero by luck).
    within = [_log_se(r) for r in measured]
    if None in within:  # a process too short for an interval of its own: no floor to trust
        return row
    between = statistics.stdev(logs) / math.sqrt(n)
    floor = math.sqrt(sum(x * x for x in within)) / n
    row.log_se = max(between, floor)
    half = t95(n - 1) * row.log_se
    row.median_ci_lo, row.median_ci_hi = math.exp(centre - half), math.exp(centre + half)
    return row


def _profile_stats(r: RunStats, run_steps: list[dict]) -> None:
    profiled: dict[int, list[float]] = {}
    for s in run_steps:
        if s.get("profiled"):
            profiled.setdefault(s["profiled"], []).append(s["ms"])
    r.profiled_steps = sum(len(v) for v in profiled.values())
    r.warmup_steps -= r.profiled_steps
    for p in r.profiles:
        times = profiled.get(p.get("capture"))
        p["recorded_median_ms"] = statistics.median(times) if times else None


def _compare(r: RunStats, runs: dict[str, RunStats], losses: dict[str, dict[int, float]]) -> None:
    eager = [b for b in runs.values() if b.mode == "eager" and b.precision == r.precision and b.median_ms]
    # With --repeats, the eager process of the same round: it ran beside this one.
    base = next((b for b in eager if b.replicate == r.replicate), eager[0] if eager else None)
    if base is None:
        return
    r.baseline = base.label
    base_loss = losses[base.run]
    diffs = [abs(x - base_loss[i]) for i, x in losses[r.run].items() if i in base_loss]
    r.common_steps = len(diffs)
    r.max_loss_diff = max(diffs) if diffs else None
    if not r.median_ms:
        return
    r.speedup = base.median_ms / r.median_ms
    if r is base:
        return
    se_a, se_b = _log_se(base), _log_se(r)
    if se_a is not None and se_b is not None:
        se = math.hypot(se_a, se_b)  # two independent samples: log-ratio variances add
        crit = Z95
        if r.processes and base.processes:  # combined rows: Student's t, Welch's degrees of freedom
            crit = t95(welch_df(se_a, _measured_processes(base) - 1, se_b, _measured_processes(r) - 1))
        r.speedup_lo = r.speedup * math.exp(-crit * se)
        r.speedup_hi = r.speedup * math.exp(crit * se)
        r.within_noise = r.speedup_lo <= 1.0 <= r.speedup_hi
    gain_ms = base.median_ms - r.median_ms
    extra_s = (r.overhead_s or 0.0) - (base.overhead_s or 0.0)
    if r.speedup_lo is not None:
        gains = sorted(base.median_ms - base.median_ms / x for x in (r.speedup_lo, r.speedup_hi))
        r.breakeven_lo = max(0, math.ceil(extra_s * 1000.0 / gains[1])) if gains[1] > 0 else None
        r.breakeven_hi = max(0, math.ceil(extra_s * 1000.0 / gains[0])) if gains[0] > 0 else None
    if gain_ms <= 0:
        r.breakeven_never = extra_s > 0 or gain_ms < 0
        if not r.breakeven_never:
            r.breakeven_steps = 0
        return
    n = max(0, math.ceil(extra_s * 1000.0 / gain_ms))
    r.breakeven_steps = n
    # Wall time of the variant's run when it gets there: its warm-up, then steady steps.
    r.breakeven_s = (r.overhead_s or 0.0) + n * r.median_ms / 1000.0


def _window(run_steps: list[dict]) -> tuple[float, float] | None:
    """Wall-clock span of the steady state: first measured step's start to the last step's end."""
    measured = [s for s in run_steps if is_measured(s)]
    if not measured:
        return None
    return measured[0]["t"] - measured[0]["ms"] / 1000.0, run_steps[-1]["t"]


def _mean(values: list) -> float | None:
    values = [v for v in values if v is not None]
    return statistics.fmean(values) if values else None


def _max(values: list):
    values = [v for v in values if v is not None]
    return max(values) if values else None


def _probe_stats(r: RunStats, run_steps: list[dict], samples: list[dict], pauses: list[list]) -> None:
    # A paused runner idles: its samples would pull the load figures down.
    mine = [(s, s["runs"][r.run]) for s in samples if r.run in s.get("runs", {})
            and not any(a <= s["t"] and (b is None or s["t"] <= b) for a, b in pauses)]
    span = _window(run_steps)
    if span is not None:
        steady = [(s, v) for s, v in mine if span[0] <= s["t"] <= span[1]]
        mine = steady or mine  # a run shorter than a sampling period: use what there is
    r.samples = len(mine)
    if not mine:
        return
    host = [v for _, v in mine]
    r.cpu_mean = _mean([v.get("cpu_percent") for v in host])
    r.cpu_max = _max([v.get("cpu_percent") for v in host])
    r.tree_rss_max = _max([v.get("rss") for v in host])
    r.children_max = _max([v.get("descendants") for v in host])
    r.gpu_proc_mem_max = _max([v.get("gpu_mem") for v in host])
    devices = [d for s, v in mine for d in s.get("devices", []) if d.get("index") in v.get("gpus", [])]
    if not devices:
        return
    r.gpu_util_mean = _mean([d.get("util_gpu") for d in devices])
    r.vram_max = _max([d.get("mem_used") for d in devices])
    r.temp_max = _max([d.get("temp_c") for d in devices])
    r.power_mean = _mean([d.get("power_w") for d in devices])
    known = [d for d in devices if d.get("throttle_reasons") is not None]
    throttled = 0
    for d in known:
        active = [x for x in d["throttle_reasons"] if x not in BENIGN_REASONS]
        throttled += bool(active)
        for reason in active:
            r.throttle_reasons[reason] = r.throttle_reasons.get(reason, 0) + 1
    r.throttled_share = throttled / len(known) if known else None
