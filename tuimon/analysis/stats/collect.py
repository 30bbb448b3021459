"""Folding a session's events into rows, one event at a time (bounded memory for the live UI),
and ``summary()``: every statistic computed from what was folded."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import replace

from tuimon import events
from tuimon.analysis.files import TYPES as FILE_EVENTS
from tuimon.analysis.files import FilesFold
from tuimon.analysis.stats.agreement import loss_gap
from tuimon.analysis.stats.anatomy import checked, training_starts
from tuimon.analysis.stats.anatomy import doubts as reading_doubts
from tuimon.analysis.stats.apply import apply_run, apply_session, as_told
from tuimon.analysis.stats.axes import axis_compare
from tuimon.analysis.stats.compare import compare
from tuimon.analysis.stats.compiles import combine_compiles, compile_story, untimed
from tuimon.analysis.stats.cycles import session_cycle
from tuimon.analysis.stats.energy import combine_energy, energy_stats
from tuimon.analysis.stats.faults import FaultTrack
from tuimon.analysis.stats.flops import first_count, flop_rates
from tuimon.analysis.stats.gc_pauses import GcTrack
from tuimon.analysis.stats.known import ended, look
from tuimon.analysis.stats.load import busy_periods, own_periods, session_busy
from tuimon.analysis.stats.memory import MemoryFold, combine_memory, memory_compare, memory_stats
from tuimon.analysis.stats.noise import pooled, session_plan, within_rounds
from tuimon.analysis.stats.phases import combine_phases, phase_compare, phase_stats
from tuimon.analysis.stats.probes import probe_stats
from tuimon.analysis.stats.ranks import JobFold
from tuimon.analysis.stats.replicates import combine_replicates, noise_interval
from tuimon.analysis.stats.rows import RunStats, SessionSummary
from tuimon.analysis.stats.sequential import Design
from tuimon.analysis.stats.steady_state import (
    HEAD,
    final_loss,
    is_measured,
    late_compiles,
    profile_stats,
    steady_window,
    step_compile_s,
    step_stats,
)
from tuimon.analysis.stats.verdict import decide
from tuimon.analysis.stats.warm import WARM_EVENTS, WarmTrack
from tuimon.axes import order_from
from tuimon.failures import OOM_CUDA, OOM_HOST
from tuimon.sessiondir.run_state import RunState, SessionState


def summarize(session_events: list[dict], unreadable_lines: int = 0,
              answer: dict | None = None) -> SessionSummary:
    """Every statistic of a whole session (the exports: every step is kept). ``answer``:
    horizon / loss_tolerance to weigh instead of the session's own (``tuimon summary
    --horizon``)."""
    collector = Collector(unreadable_lines=unreadable_lines, answer=answer)
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
                 unreadable_lines: int = 0, answer: dict | None = None,
                 new_run: Callable[[str], RunState] = RunState) -> None:
        self.keep_steps = keep_steps
        self.answer = {k: v for k, v in (answer or {}).items() if v is not None}
        # What the events say of each run (sessiondir/run_state.py); ``new_run``: a reader's
        # own record of a run (the TUI's), folded here once for both.
        self.state = SessionState(new_run, joined=lambda steps, job: self._job(job["run"]).joined(steps, job))
        self.runs: dict[str, RunStats] = {}  # each run's figures, folded
        self._apart: dict[str, list[dict]] = {}
        self._measured: dict[str, deque] = {}
        self._counts: dict[str, list[int]] = {}  # run -> [steps, measured]
        self._loss: dict[str, LossTrack] = {}
        self._faults: dict[str, FaultTrack] = {}  # run -> its page faults per flush window
        self._gc: dict[str, GcTrack] = {}  # run -> its garbage collector's pauses (gc_pauses.py)
        self._samples: deque = deque(maxlen=keep_samples)
        self._session = SessionSummary([], unreadable_lines=unreadable_lines)
        self.jobs: dict[str, JobFold] = {}  # torchrun jobs: their ranks' figures (stats/ranks.py)
        self.warm = WarmTrack()  # cache lookups and facts, for the reasons of a miss (stats/warm.py)
        self._files = FilesFold()  # a script session's files (analysis/files.py)
        self._memory: dict[str, MemoryFold] = {}  # run -> its memory per phase (stats/memory.py)
        self._rapl: str | None = None  # why RAPL's CPU energy cannot be read (probe_info)

    def extend(self, evs) -> None:
        for e in evs:
            self.add(e)

    def add(self, e: dict) -> list[dict]:
        """Fold one event: the run state first, then the figures. Returns the steps it completed:
        [e] for a run's step, the job steps a rank's event completed (the slowest rank's), else
        none."""
        steps = self.state.add(e)
        kind, run = e["type"], e.get("run")
        if kind == events.SAMPLE:
            self._samples.append(e)
            for job_run, values in e.get("runs", {}).items():
                if values.get("ranks") and job_run in self.jobs:
                    self.jobs[job_run].sample(e["t"], values["ranks"])
            return steps
        if kind == events.CONTROL:
            return steps  # what the user asked; the runs' own events say what it changed
        if kind in FILE_EVENTS:
            self._files.add(e)
            return steps
        if kind == events.PROBE_INFO and e.get("rapl"):
            self._rapl = e["rapl"]
        elif kind == events.MEMORY_PHASES and run is not None:
            self._memory.setdefault(run, MemoryFold()).add(e)
            return steps
        if kind in WARM_EVENTS:
            self.warm.add(e)
        if run is None:
            apply_session(self._session, e)
        elif run not in self.runs:
            s = self.state.runs[run]
            self.runs[run] = RunStats(run, s.mode, s.precision)
            self._apart[run], self._measured[run] = [], deque(maxlen=self.keep_steps)
            self._counts[run] = [0, 0]
            self._loss[run] = LossTrack(None if self.keep_steps is None else self.keep_steps)
            self._faults[run] = FaultTrack()
            self._gc[run] = GcTrack()
        for s in steps:
            self._step(s["run"], s)
        if run is None:
            return steps
        if e.get("rank") is not None:  # a rank of a torchrun job
            self._job(run).add(e)
        elif kind != events.STEP:
            if kind == events.MEMORY:  # sent after the steps of its flush: a window's faults
                self._faults[run].mark(e.get("minflt"), *self._counts[run])
            elif kind == events.GC:  # its collections' pauses over a window of steps
                self._gc[run].add(e)
            apply_run(self.runs[run], e)
        return steps

    def _job(self, run: str) -> JobFold:
        if run not in self.jobs:
            s = self.state.runs[run]
            self.jobs[run] = JobFold(run, s.mode, s.precision, self.keep_steps)
        return self.jobs[run]

    def _step(self, run: str, e: dict) -> None:
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

    def steps(self, run: str) -> list[dict]:
        """The steps held for a run, in order."""
        apart, measured = self._apart[run], self._measured[run]
        if not apart or not measured or apart[-1]["i"] < measured[0]["i"]:
            return apart + list(measured)
        return sorted(apart + list(measured), key=lambda s: s["i"])

    def _row(self, run: str) -> RunStats:
        """The summary's own row: what the run's events say and its figures (records are frozen:
        the fold replaces one, never changes one), its graph breaks most frequent first."""
        r = as_told(self.runs[run], self.state.runs[run])
        return replace(r, compile=replace(r.compile, graph_breaks=sorted(r.compile.graph_breaks,
                                                                         key=lambda b: -b["count"])))

    def summary(self) -> SessionSummary:
        """Every statistic of what was folded, as records composed into rows in the order they
        depend on each other. The rows are the summary's own (``_copy``); no statistics module
        changes one: each returns a record (or a new row), put in the row here."""
        runs = {run: self._row(run) for run in self.runs}
        steps = {run: self.steps(run) for run in runs}
        samples = list(self._samples)
        quiet_only = self._session.quiet_only
        own = self._session.schedule != "parallel"  # runs side by side, as the user asked
        first = dict(runs)
        for run in runs:
            runs[run] = self._run_row(first[run], steps[run], samples, quiet_only, own)
        cycled = session_cycle([r.timing.cycle for r in runs.values()])
        for run in [run for run, r in runs.items() if r.timing.cycle != cycled and cycled > 1]:
            # the steps alternate in one row: every row weighed by cycles of that length (cycles.py)
            runs[run] = self._run_row(first[run], steps[run], samples, quiet_only, own, cycled)
        for r in runs.values():  # each compiled run's start, and why a warm one missed
            r.warm = self.warm.finish(r)
        losses = {run: track.points for run, track in self._loss.items()}
        for r in runs.values():
            r.probes, r.load = probe_stats(r, steps[r.run], samples, self.state.runs[r.run].pauses,
                                           quiet_only, own)
            r.memory = memory_stats(r, self._memory.get(r.run))
            r.energy = energy_stats(r, steps[r.run], samples, self.state.runs, self._rapl)
        variants = combine_replicates(list(runs.values()))
        for v in variants.values():
            v.phases = combine_phases([runs[p["run"]] for p in v.processes])
            v.memory = combine_memory([runs[p["run"]] for p in v.processes])
            v.energy = combine_energy([runs[p["run"]] for p in v.processes])
        noise = pooled(list(variants.values()))  # the spread between processes, for every interval
        noise = within_rounds(list(variants.values()), noise)  # and within a round: paired ratios
        design = Design.from_dict(self._session.until_known)  # --until-known: intervals it may stop on
        noise = replace(noise, design=design)
        for v in variants.values():
            v.timing = noise_interval(v, noise)
            v.flops = flop_rates(first_count([runs[p["run"]] for p in v.processes]), v.timing,
                                 v.phases, v.device, v.device_name, v.doubts)
        pinned = self._session.pin_malloc
        for run in runs:  # after every run's probes: a comparison weighs both loads
            r = compare(runs[run], runs, losses, noise, pinned)
            r.phases = phase_compare(r, runs, noise)
            r.memory = memory_compare(r, runs)
            runs[run] = r
        for v in variants.values():  # compiles and losses: every process, a busy round's too
            every = sorted(v.processes + v.left_out, key=lambda p: p["round"] or 0)
            processes = [runs[p["run"]] for p in every if p["run"] in runs]
            v.compile = combine_compiles(v, processes)
            v.timing = replace(v.timing, untimed=untimed(processes))  # said with its compiles
            losses[v.run] = losses[every[0]["run"]]  # round 1's (the whole length) speak for it
        for run in variants:
            v = compare(variants[run], variants, losses, noise, pinned)
            v.phases = phase_compare(v, variants, noise)
            v.memory = memory_compare(v, variants)
            variants[run] = v
        session = replace(self._session, **self.answer)
        session.axes = order_from([r.axes for r in runs.values()], self._session.axes)
        for rows in (runs, variants):
            for r in rows.values():
                r.compare = axis_compare(r, rows, session.axes, noise)
                r.loss = loss_gap(r, rows, losses)
        session.busy = session_busy(list(runs.values()))
        skipped = skipped_at_build(session, runs)
        for s in skipped:  # skipped, not failed
            runs[s["run"]] = replace(runs[s["run"]], status="skipped")
        session = replace(session, runs=list(runs.values()), variants=list(variants.values()), noise=noise,
                          unsupported=list(self._session.unsupported),
                          warnings=list(self.state.warnings),
                          skipped=list(self._session.skipped) + skipped)
        session.plan = session_plan(session.variants or session.runs, noise)
        session.verdict = decide(session)
        if design is not None:  # how far its answer is, or why it stopped (stats/known.py)
            session.known = ended(session.known, look(session, design), self.state.ended)
        session.files = self._files.report({r.run: r.label + (f" #{r.replicate}" if r.replicate else "")
                                            for r in runs.values()})
        return session

    def _run_row(self, r: RunStats, steps: list[dict], samples: list[dict], quiet_only: bool,
                 own: bool, cycle_of: int | None = None) -> RunStats:
        """One run's row from its steps: its step times, phases, load, compiles, in turn."""
        job = self.jobs.get(r.run)
        if job is not None:  # what its ranks say for the job (compiles, memory, world size)
            r = job.lead(r, self.state.runs[r.run])
        busy = busy_periods(samples, r.run) if quiet_only else None
        timing, load, steady = step_stats(r, steps, *self._counts[r.run], busy=busy,
                                          own=own_periods(samples, r.run) if own else None,
                                          quiet_only=quiet_only, cycle_of=cycle_of)
        timing, profiles = profile_stats(timing, r.profiles, steps)
        gc_ms, gc_per_100 = self._gc[r.run].per_step(timing.steady_from)
        timing = replace(timing, gc_ms=gc_ms, gc_per_100=gc_per_100)
        compiles = r.compile
        if r.compiled and compiles.compile_s is None:  # the runner did not say: its steps do
            compiles = replace(compiles, compile_s=step_compile_s(steps))
        r = replace(r, timing=timing, profiles=profiles, compile=compiles, phases=phase_stats(steady),
                    doubts=r.doubts + late_compiles(steps, timing.steady_from,
                                                    training_starts(r.anatomy)),
                    load=replace(load, faults_per_step=self._faults[r.run].per_step()),
                    loss=replace(r.loss, final_loss=final_loss(steps),
                                 loss_nonfinite=self._loss[r.run].nonfinite))
        if job is not None:  # its ranks against each other, over its steady state
            window = steady_window(steps)
            r = job.summarize(r, self.state.runs[r.run], timing.steady_from, window[0] if window else None)
        r.compile = compile_story(r)  # once its status and steady state are known
        whole = steps and len(steps) == self._counts[r.run][0]  # every step kept (not the live UI's)
        span = (steps[0]["t"] - steps[0]["ms"] / 1000.0, steps[-1]["t"]) if whole else None
        r.anatomy = checked(r.anatomy, self._loss[r.run].points, {s["i"]: s["ms"] for s in steps}, span)
        r.doubts = r.doubts + reading_doubts(r.anatomy)  # a reading the run contradicts
        r.flops = flop_rates(r.flops, r.timing, r.phases, r.device, r.device_name, r.doubts)
        return r


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
        self.nonfinite = 0  # steps without a loss after one had it: NaN or inf (events say null)

    def add(self, i: int, loss: float | None) -> None:
        if loss is None and self.points:
            self.nonfinite += 1
        if loss is None or i % self.stride:
            return
        self.points[i] = loss
        if self.cap is not None and len(self.points) > self.cap:
            self.stride *= 2
            self.points = {k: v for k, v in self.points.items() if k % self.stride == 0}


def skipped_at_build(session: SessionSummary, runs: dict[str, RunStats]) -> list[dict]:
    """tuimon sweep: a variant that ran out of memory before its first step is skipped (too big
    for this machine), not failed: {label, run, reason} each."""
    if not session.sweep:
        return []
    return [{"label": r.label, "run": r.run, "reason": r.failure.error or r.failure.failure_kind}
            for r in runs.values() if r.status == "failed"
            and r.failure.failure_kind in (OOM_HOST, OOM_CUDA) and r.timing.steps == 0]
