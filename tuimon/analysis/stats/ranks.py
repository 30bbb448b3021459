"""A torchrun job's figures, rank by rank: what the statistics add to the ranks' state
(sessiondir/run_state.py). Each rank folds its compiles and memory as a run does (apply.py) and
keeps the last ``keep`` measured steps' times for stragglers.py; ``summarize`` fills the job's
row, the lead (lowest) rank speaking for the whole job's compiles and memory."""

from __future__ import annotations

import time
from collections import deque
from dataclasses import asdict, dataclass, field, replace

from tuimon import events
from tuimon.analysis.stats.apply import apply_run
from tuimon.analysis.stats.collectives import CollectiveTrack
from tuimon.analysis.stats.rows import RunStats, max_of, mean_of
from tuimon.analysis.stats.steady_state import is_measured
from tuimon.analysis.stats.stragglers import (
    divergence,
    own_times,
    rank_medians,
    skew_pct,
    stragglers,
)
from tuimon.sessiondir.job_steps import JobSteps
from tuimon.sessiondir.run_state import RankState, RunState

LIVE_SAMPLES = 600  # probe samples kept per rank by a live view (its whole run for an export)
WAITED = 0.95  # a rank whose own time is below this share of its step spent the rest waiting
# A live view (bounded) redoes the ranks' medians and stragglers at most this often, and never
# more than a tenth of the time (64 ranks x 4 096 steps take ~0.8 s on the CI machine).
REFRESH_S = 1.0
WHO = ("local_rank", "node_rank", "host", "pid", "device", "device_name", "backend")
LEAD_COMPILE = ("compile_phases", "graphs_fwd", "graphs_bwd", "graph_breaks", "recompile_reasons",
                "fx_cache_hits", "fx_cache_misses")


@dataclass
class RankStats:
    """One rank's figures, as the summary and the rank view show them beside its state."""

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
    # FSDP2 on the CPU: ms a steady step spent in all-gathers and reduce-scatters (stats/
    # collectives.py); None: not measured (no FSDP2, CUDA) or no window past the warm-up
    all_gather_ms: float | None = None
    reduce_scatter_ms: float | None = None
    collectives: bool = False  # the rank said any (an FSDP2 rank on the CPU)


class JobFold:
    """One job's figures a rank: its compiles and memory, its times in the job's steps."""

    def __init__(self, run: str, mode: str, precision: str, keep: int | None) -> None:
        self.run, self.mode, self.precision = run, mode, precision
        self.keep = keep
        self.rows: dict[int, RunStats] = {}
        self.series: dict[int, deque] = {}  # rank -> (i, ms, own, pre, ph) of measured job steps
        self.compile_steps: dict[int, set[int]] = {}
        self.collectives: dict[int, CollectiveTrack] = {}  # rank -> FSDP2's collectives' windows
        self.samples: dict[int, deque] = {}  # rank -> (t, its values in a probe sample)
        self._analysis: tuple | None = None  # a live view's last (medians, stragglers), when
        self._analysed_at, self._analysis_s = 0.0, 0.0
        self._analysis_key: tuple | None = None

    def row(self, rank: int) -> RunStats:
        if rank not in self.rows:
            self.rows[rank] = RunStats(f"{self.run}#{rank}", self.mode, self.precision)
            self.series[rank] = deque(maxlen=self.keep)
            self.samples[rank] = deque(maxlen=None if self.keep is None else LIVE_SAMPLES)
            self.compile_steps[rank] = set()
        return self.rows[rank]

    def add(self, e: dict) -> None:
        """Fold one rank event into its figures."""
        rank = e["rank"]
        row = self.row(rank)
        if e["type"] == events.COLLECTIVES:
            self.collectives.setdefault(rank, CollectiveTrack()).add(e)
        elif e["type"] != events.STEP:
            apply_run(row, e)
        elif e.get("compile_ms"):
            self.compile_steps[rank].add(e["i"])

    def joined(self, steps: dict[int, dict], job: dict) -> None:
        """A job step joined (sessiondir/job_steps.py): each rank's times in it, when measured."""
        if is_measured(job):
            own = own_times(steps)
            for r, x in steps.items():
                self.row(r)
                self.series[r].append((job["i"], x["ms"], own[r], x.get("pre_ms"), x.get("ph")))

    def sample(self, t: float, ranks: dict) -> None:
        for key, values in ranks.items():
            rank = int(key)
            if rank in self.samples:
                self.samples[rank].append((t, values))

    # ---- the summary ---------------------------------------------------------------------------
    def lead(self, job: RunStats, state: RunState) -> RunStats:
        """The job's row with what its ranks say for the whole job (before the job's step
        statistics): the lowest rank's compiles and turns, memory peaks, world size."""
        if not self.rows:
            return job
        ranks = sorted(self.rows)
        lead = self.rows[ranks[0]]
        peaks = ("peak_rss", "cuda_peak_allocated", "cuda_peak_reserved")
        compiles = replace(job.compile, **{key: getattr(lead.compile, key) for key in LEAD_COMPILE},
                           compile_s=max_of([self.rows[r].compile.compile_s for r in ranks])
                           or job.compile.compile_s,
                           recompiles=max(self.rows[r].compile.recompiles for r in ranks),
                           compiles=max(self.rows[r].compile.compiles for r in ranks))
        said = [rs.started for _, rs in sorted(state.ranks.items()) if rs.started]
        # How the loop was read: the lead rank's reading (every rank runs the same script). Not
        # checked against what the script printed: a rank prints its own loss, the job's is the
        # ranks' mean; nor against the process's clock, which is each rank's.
        reading = replace(lead.anatomy, printed={}, clock=job.anatomy.clock, checks=())
        return replace(
            job, turns=state.ranks[ranks[0]].turns, compile=compiles, anatomy=reading,
            probes=replace(job.probes, **{key: max_of([getattr(self.rows[r].probes, key) for r in ranks])
                                          for key in peaks}),
            job=replace(job.job, world_size=max([w for w in (x.get("world_size") for x in said) if w]
                                                or [len(ranks)]),
                        backend=next((x["backend"] for x in said if x.get("backend")), None),
                        hosts=sorted({x["host"] for x in said if x.get("host")})))

    def summarize(self, job: RunStats, state: RunState, steady_from: int | None,
                  samples_from: float | None) -> RunStats:
        """The job's row with its per-rank rows, skew, stragglers and divergence, over the job's
        steady state (and its status once every rank has ended)."""
        ranks = sorted(state.ranks)
        if not ranks or state.job is None:
            return job
        medians, slow = self._analyse(ranks, steady_from, state.job)
        rows = [self._rank(state.ranks[r], medians.get(r, {}), slow.get(r), samples_from, steady_from)
                for r in ranks]
        diverging = divergence(
            {r: {"graphs": self.row(r).compile.graphs_fwd, "recompiles": self.row(r).compile.recompiles,
                 "breaks": sum(b["count"] for b in self.row(r).compile.graph_breaks),
                 "compile_steps": self.compile_steps[r],
                 "reasons": self.row(r).compile.recompile_reasons} for r in ranks},
            {r: state.ranks[r].last_i for r in ranks})
        own = {x["rank"]: x["own_ms"] for x in rows if x["own_ms"] is not None}
        status = job.status
        if status in ("running", "queued") and not state.job.active and not any(
                rs.active for rs in state.ranks.values()):
            status = "failed" if any(rs.status == "failed" for rs in state.ranks.values()) else "done"
        return replace(job, status=status, job=replace(
            job.job, ranks=rows, skew_pct=skew_pct(own), stragglers=list(slow.values()),
            compile_divergence=diverging))

    def _rank(self, rs: RankState, medians: dict, slow: dict | None, since: float | None,
              steady_from: int | None) -> dict:
        """One rank's row of the summary: its state and its figures."""
        row = self.row(rs.rank)
        track = self.collectives.get(rs.rank)
        waits = track.per_step(steady_from) if track is not None else None
        stat = RankStats(**medians, graphs=row.compile.graphs_fwd,
                         all_gather_ms=waits["all_gather"] if waits else None,
                         reduce_scatter_ms=waits["reduce_scatter"] if waits else None,
                         collectives=track is not None,
                         graph_breaks=sum(b["count"] for b in row.compile.graph_breaks),
                         recompiles=row.compile.recompiles, compile_s=row.compile.compile_s,
                         peak_rss=row.probes.peak_rss)
        stat.waited = stat.own_ms is not None and stat.median_ms is not None \
            and stat.own_ms < WAITED * stat.median_ms
        if slow is not None:
            stat.slower_pct, stat.straggler_since = slow["slower_pct"], slow["since"]
        self._probes(rs.rank, stat, since)
        said = rs.started or {}
        return {"rank": rs.rank, **{k: said.get(k) for k in WHO}, "status": rs.status,
                "error": rs.error, "steps": rs.steps, "last_step": rs.last_i if rs.steps else None,
                "loss": rs.loss, **asdict(stat)}

    def _analyse(self, ranks: list[int], steady_from: int | None, job: JobSteps) -> tuple[dict, dict]:
        """Each rank's medians and the stragglers (cached for a while in a live view)."""
        now, key = time.monotonic(), (job.next_i, steady_from, len(job.active))
        if self._analysis is not None and self._analysis_key == key:
            return self._analysis  # nothing new since
        if (self.keep is not None and self._analysis is not None and job.active
                and now - self._analysed_at < max(REFRESH_S, 10 * self._analysis_s)):
            return self._analysis  # a live job: its next steps come soon, and refresh it
        self._analysis_key = key
        series = {r: [x for x in self.series.get(r, ()) if steady_from is None or x[0] >= steady_from]
                  for r in ranks}
        self._analysis = ({r: rank_medians(series[r]) for r in ranks},
                          {s["rank"]: s for s in stragglers(series)})
        self._analysed_at, self._analysis_s = now, time.monotonic() - now
        return self._analysis

    def _probes(self, rank: int, stat: RankStats, since: float | None) -> None:
        values = [v for t, v in self.samples.get(rank, ()) if since is None or t >= since]
        if not values:
            return
        stat.cpu_mean = mean_of([v.get("cpu_percent") for v in values])
        stat.cpu_max = max_of([v.get("cpu_percent") for v in values])
        stat.rss_max = max_of([v.get("rss") for v in values])
        stat.gpus = sorted({g for v in values for g in v.get("gpus") or []})
        stat.gpu_util_mean = mean_of([v.get("sm_util") for v in values])
        stat.gpu_mem_max = max_of([v.get("gpu_mem") for v in values])
