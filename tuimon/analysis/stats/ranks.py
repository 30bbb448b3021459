"""A torchrun job's ranks, folded from their events (the ones that carry ``rank``).

A run is the whole job. Its steps are joined from the ranks' steps at the same index: the job's
step is the *slowest* rank's (its time; the batch counts of every rank; the mean of their
losses), complete once every rank still going has sent it, so ``collect`` then treats the
job's steps as any run's. Each rank keeps a row of its own (``RunStats``, by the collector's
own event folding: status, compiles, memory) and, for the steps the job measured, its step,
own and pre-backward times (stragglers.py). Memory stays bounded as in the collector: the last
``keep`` measured steps per rank.

``summarize`` fills the job's row: world size, per-rank rows (``RankStats``), skew, stragglers
and compile divergence, and what the lead rank (the lowest) says for the whole job (device,
notes, compile figures).
"""

from __future__ import annotations

import statistics
import time
from collections import deque
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace

from tuimon import events
from tuimon.analysis.stats.rows import RunStats, max_of, mean_of
from tuimon.analysis.stats.steady_state import is_measured
from tuimon.analysis.stats.stragglers import (
    divergence,
    own_times,
    rank_medians,
    skew_pct,
    stragglers,
)

MAX_PENDING = 4096  # step indices waiting for a rank, at most: past it, the oldest joins as is
LIVE_SAMPLES = 600  # probe samples kept per rank by a live view (its whole run for an export)
WAITED = 0.95  # a rank whose own time is below this share of its step spent the rest waiting
# A live view (bounded) redoes the ranks' medians and stragglers at most this often, and never
# more than a tenth of the time (64 ranks x 4 096 steps take ~0.8 s on the CI machine).
REFRESH_S = 1.0
IDENTITY = ("local_rank", "node_rank", "host", "pid", "device", "device_name", "backend",
            "job_id", "master", "world_size", "restart")
LEAD_FIELDS = ("device", "device_name", "params", "batch_size", "turns")
LEAD_COMPILE = ("compile_phases", "graphs_fwd", "graphs_bwd", "graph_breaks", "recompile_reasons",
                "fx_cache_hits", "fx_cache_misses")


@dataclass
class RankStats:
    """One rank of a job, as the summary and the rank view show it."""

    rank: int
    local_rank: int | None = None
    node_rank: int | None = None
    host: str | None = None
    pid: int | None = None
    device: str | None = None
    device_name: str | None = None
    backend: str | None = None
    status: str = "running"  # running | done | stopped | failed | killed (ended without a word)
    error: str | None = None
    steps: int = 0
    last_step: int | None = None
    loss: float | None = None
    median_ms: float | None = None  # its step time over the job's steady state
    p90_ms: float | None = None
    own_ms: float | None = None  # its step less its waits for slower ranks (stragglers.py)
    waited: bool = False  # its own time well below its step (WAITED): the rest waited for others
    pre_ms: float | None = None  # from the step's start to its last backward()
    slower_pct: float | None = None  # a straggler: own time over the other ranks', %
    straggler_since: int | None = None
    graphs: int = 0
    graph_breaks: int = 0
    recompiles: int = 0
    compile_s: float | None = None
    peak_rss: int | None = None
    cpu_mean: float | None = None  # % of one core, the rank's process tree
    cpu_max: float | None = None
    rss_max: int | None = None
    gpus: list[int] = field(default_factory=list)  # NVML indices its pid was seen on
    gpu_util_mean: float | None = None  # % SM of its own processes (NVML)
    gpu_mem_max: int | None = None


class JobFold:
    """One job's rank events; ``apply``: the collector's own folding of an event into a row."""

    def __init__(self, run: str, apply: Callable[[RunStats, dict], None], keep: int | None) -> None:
        self.run = run
        self._apply = apply
        self.keep = keep
        self.rows: dict[int, RunStats] = {}
        self.info: dict[int, dict] = {}
        self.active: set[int] = set()  # ranks that may still send steps
        self.killed: set[int] = set()
        self.pending: dict[int, dict[int, dict]] = {}
        self.next_i = 0  # the lowest step index not joined yet
        self.series: dict[int, deque] = {}  # rank -> (i, ms, own, pre, ph) of measured job steps
        self.counts: dict[int, int] = {}
        self.last_i: dict[int, int] = {}
        self.loss: dict[int, float] = {}
        self.compile_steps: dict[int, set[int]] = {}
        self.held: list[tuple[int, int]] = []  # catch-ups: step indices [first, last) kept apart
        self.samples: dict[int, deque] = {}  # rank -> (t, its values in a probe sample)
        self._analysis: tuple | None = None  # a live view's last (medians, stragglers), when
        self._analysed_at, self._analysis_s = 0.0, 0.0
        self._analysis_key: tuple | None = None

    def row(self, rank: int, e: dict) -> RunStats:
        if rank not in self.rows:
            self.rows[rank] = RunStats(f"{self.run}#{rank}", e.get("mode", "?"), e.get("precision", "?"))
            self.series[rank] = deque(maxlen=self.keep)
            self.samples[rank] = deque(maxlen=None if self.keep is None else LIVE_SAMPLES)
            self.compile_steps[rank] = set()
        return self.rows[rank]

    def add(self, e: dict) -> list[dict]:
        """Fold one rank event; the job steps it completed, in order."""
        rank, kind = e["rank"], e["type"]
        row = self.row(rank, e)
        if kind == events.STEP:
            i = e["i"]
            self.counts[rank] = self.counts.get(rank, 0) + 1
            self.last_i[rank] = i
            if e.get("loss") is not None:
                self.loss[rank] = e["loss"]
            if e.get("compile_ms"):
                self.compile_steps[rank].add(i)
            if rank not in self.killed:
                self.active.add(rank)
            if i >= self.next_i:
                self.pending.setdefault(i, {})[rank] = e
            return self._complete()
        self._apply(row, e)
        if kind == events.RUN_STARTED:
            self.info[rank] = {k: e.get(k) for k in IDENTITY}
            self.active.add(rank)
        elif kind in (events.FINISHED, events.FAILED) or (kind == events.RUN_EXITED
                                                          and e.get("said") is False):
            if kind == events.RUN_EXITED:
                self.killed.add(rank)
            self.active.discard(rank)
            return self._complete()
        return []

    def hold(self, first: int, last: int) -> None:
        """A catch-up (control/job_child.py): steps [first, last) of some ranks held a wait."""
        self.held.append((first, last))

    def sample(self, t: float, ranks: dict) -> None:
        for key, values in ranks.items():
            rank = int(key)
            if rank in self.samples:
                self.samples[rank].append((t, values))

    def end(self) -> list[dict]:
        """The job ended: every step still waiting joins with the ranks that sent it."""
        self.active.clear()
        return self._complete()

    def _complete(self) -> list[dict]:
        out = []
        while self.pending:
            steps = self.pending.get(self.next_i)
            if steps is None:
                if self.next_i > max(self.pending):
                    break
                self.next_i += 1
                continue
            if not self.active <= steps.keys() and len(self.pending) < MAX_PENDING:
                break
            out.append(self._join(self.next_i, self.pending.pop(self.next_i)))
            self.next_i += 1
        return out

    def _join(self, i: int, steps: dict[int, dict]) -> dict:
        slowest = max(steps, key=lambda r: steps[r]["ms"])
        s = steps[slowest]
        losses = [x["loss"] for x in steps.values() if x.get("loss") is not None]
        job = {"type": events.STEP, "run": self.run, "t": max(x.get("t", 0.0) for x in steps.values()),
               "i": i, "ms": s["ms"], "data_ms": s.get("data_ms", 0.0),
               "n": sum(x.get("n") or 0 for x in steps.values()),
               "loss": statistics.fmean(losses) if losses else None,
               "phase": "steady" if all(x.get("phase") == "steady" for x in steps.values()) else "warmup",
               "slowest": slowest}
        compile_ms = max((x.get("compile_ms") or 0.0) for x in steps.values())
        if compile_ms:
            job["compile_ms"] = compile_ms
        # The job's split: the rank the others waited for (the last to reach backward(); its
        # backward holds no wait), else the slowest; under DDP every rank's step ends together,
        # so the slowest by time is any of them.
        pres = {r: x["pre_ms"] for r, x in steps.items() if x.get("pre_ms") is not None}
        critical = steps[max(pres, key=pres.get)] if pres else s
        if critical.get("ph") is not None:
            job["ph"] = critical["ph"]
        profiled = next((x["profiled"] for x in steps.values() if x.get("profiled")), None)
        if profiled:
            job["profiled"] = profiled
        if any(x.get("gap") for x in steps.values()) or any(a <= i < b for a, b in self.held):
            job["gap"] = 1
        if is_measured(job):
            own = own_times(steps)
            for r, x in steps.items():
                self.series[r].append((i, x["ms"], own[r], x.get("pre_ms"), x.get("ph")))
        return job

    # ---- the summary ---------------------------------------------------------------------------
    def lead(self, job: RunStats) -> RunStats:
        """The job's row with what the lowest rank says for the whole job (before the job's step
        statistics): device, notes, compile figures, memory peaks, world size."""
        if not self.rows:
            return job
        lead = self.rows[min(self.rows)]
        ranks = sorted(self.rows)
        warnings = list(job.warnings)
        for w in (w for r in ranks for w in self.rows[r].warnings):
            if w not in warnings:
                warnings.append(w)
        peaks = ("peak_rss", "cuda_peak_allocated", "cuda_peak_reserved")
        compiles = replace(job.compile, **{key: getattr(lead.compile, key) for key in LEAD_COMPILE},
                           compile_s=max_of([self.rows[r].compile.compile_s for r in ranks])
                           or job.compile.compile_s,
                           recompiles=max(self.rows[r].compile.recompiles for r in ranks),
                           compiles=max(self.rows[r].compile.compiles for r in ranks))
        world = [self.info[r].get("world_size") for r in ranks if self.info.get(r)]
        return replace(
            job, **{key: getattr(lead, key) for key in LEAD_FIELDS}, notes=list(lead.notes),
            warnings=warnings,
            timing=replace(job.timing, warmup_auto=lead.timing.warmup_auto), compile=compiles,
            probes=replace(job.probes, **{key: max_of([getattr(self.rows[r].probes, key) for r in ranks])
                                          for key in peaks}),
            job=replace(job.job, world_size=max([w for w in world if w] or [len(ranks)]),
                        backend=next((self.info[r].get("backend") for r in ranks
                                      if self.info.get(r, {}).get("backend")), None),
                        hosts=sorted({self.info[r].get("host") for r in ranks
                                      if self.info.get(r, {}).get("host")})))

    def summarize(self, job: RunStats, steady_from: int | None, samples_from: float | None) -> RunStats:
        """The job's row with its per-rank rows, skew, stragglers and divergence, over the job's
        steady state (and its status once every rank has ended)."""
        ranks = sorted(self.rows)
        if not ranks:
            return job
        medians, slow = self._analyse(ranks, steady_from)
        rows = []
        for r in ranks:
            stat = RankStats(r, **{k: v for k, v in (self.info.get(r) or {}).items()
                                   if k in RankStats.__dataclass_fields__})
            row = self.rows[r]
            stat.status = "killed" if r in self.killed and row.status in ("running", "queued") else (
                "running" if row.status == "queued" else row.status)
            stat.error, stat.steps = row.failure.error, self.counts.get(r, 0)
            stat.last_step, stat.loss = self.last_i.get(r), self.loss.get(r)
            stat.device = stat.device or row.device
            stat.graphs = row.compile.graphs_fwd
            stat.graph_breaks = sum(b["count"] for b in row.compile.graph_breaks)
            stat.recompiles, stat.compile_s = row.compile.recompiles, row.compile.compile_s
            stat.peak_rss = row.probes.peak_rss
            for key, value in medians.get(r, {}).items():
                setattr(stat, key, value)
            stat.waited = stat.own_ms is not None and stat.median_ms is not None \
                and stat.own_ms < WAITED * stat.median_ms
            if r in slow:
                stat.slower_pct, stat.straggler_since = slow[r]["slower_pct"], slow[r]["since"]
            self._probes(stat, samples_from)
            rows.append(asdict(stat))
        diverging = divergence(
            {r: {"graphs": self.rows[r].compile.graphs_fwd, "recompiles": self.rows[r].compile.recompiles,
                 "breaks": sum(b["count"] for b in self.rows[r].compile.graph_breaks),
                 "compile_steps": self.compile_steps[r],
                 "reasons": self.rows[r].compile.recompile_reasons} for r in ranks}, self.last_i)
        own = {x["rank"]: x["own_ms"] for x in rows if x["own_ms"] is not None}
        status = job.status
        if status in ("running", "queued") and not self.active and all(
                self.rows[r].status not in ("running", "queued") or r in self.killed for r in ranks):
            status = "failed" if any(self.rows[r].status == "failed" for r in ranks) else "done"
        return replace(job, status=status, job=replace(
            job.job, ranks=rows, skew_pct=skew_pct(own), stragglers=list(slow.values()),
            compile_divergence=diverging))

    def _analyse(self, ranks: list[int], steady_from: int | None) -> tuple[dict, dict]:
        """Each rank's medians and the stragglers (cached for a while in a live view)."""
        now, key = time.monotonic(), (self.next_i, steady_from, len(self.active))
        if self._analysis is not None and self._analysis_key == key:
            return self._analysis  # nothing new since
        if (self.keep is not None and self._analysis is not None and self.active
                and now - self._analysed_at < max(REFRESH_S, 10 * self._analysis_s)):
            return self._analysis  # a live job: its next steps come soon, and refresh it
        self._analysis_key = key
        series = {r: [x for x in self.series[r] if steady_from is None or x[0] >= steady_from]
                  for r in ranks}
        self._analysis = ({r: rank_medians(series[r]) for r in ranks},
                          {s["rank"]: s for s in stragglers(series)})
        self._analysed_at, self._analysis_s = now, time.monotonic() - now
        return self._analysis

    def _probes(self, stat: RankStats, since: float | None) -> None:
        values = [v for t, v in self.samples.get(stat.rank, ()) if since is None or t >= since]
        if not values:
            return
        stat.cpu_mean = mean_of([v.get("cpu_percent") for v in values])
        stat.cpu_max = max_of([v.get("cpu_percent") for v in values])
        stat.rss_max = max_of([v.get("rss") for v in values])
        stat.gpus = sorted({g for v in values for g in v.get("gpus") or []})
        stat.gpu_util_mean = mean_of([v.get("sm_util") for v in values])
        stat.gpu_mem_max = max_of([v.get("gpu_mem") for v in values])
