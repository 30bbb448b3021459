"""What the TUI shows, folded from events; no Textual here, so it is tested without a screen.
Run state and statistics come from the one reducer and ``stats.Collector``, never recomputed
here; this adds what only a live view needs: chart history (ui/history.py), compile pane
events, the latest probe sample, which run each panel shows."""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from tuimon import events
from tuimon.analysis import Collector, RunStats, SessionSummary
from tuimon.sessiondir.run_state import RunState
from tuimon.ui.history import RunHistory
from tuimon.variants import Variant

COMPILES = 200  # compile / recompile events kept per run for the compile pane
RANK_SERIES = 120  # points per rank: a rank row's plot is a few dozen columns wide
# A job's lowest rank speaks for the job in its charts and compile pane with these.
LEAD = (events.PHASE, events.COMPILE_PHASE, events.COMPILE, events.RECOMPILE)


@dataclass(eq=False)
class RunLive(RunState):
    """A run as its events say (RunState), and what the panels add: its charts, its compile
    pane's events, its latest probe figures (a torchrun job's: each rank's too)."""

    history: RunHistory = field(default_factory=RunHistory)  # what the charts draw
    sample: dict | None = None  # this run's part of the latest probe sample
    devices: list[dict] = field(default_factory=list)  # the GPUs it uses, latest sample
    compiles: deque = field(default_factory=lambda: deque(maxlen=COMPILES))  # compile events
    recompiles: deque = field(default_factory=lambda: deque(maxlen=COMPILES))  # recompile events
    # A job's ranks: recent steady step times (a rank's plot until its own times are in) and
    # their own probe figures (cpu_percent, rss, gpus, sm_util, gpu_mem).
    rank_ms: dict[int, deque] = field(default_factory=dict)
    rank_samples: dict[int, dict] = field(default_factory=dict)

    @property
    def device(self) -> str | None:
        said = self.started or {}
        return said.get("device_name") or said.get("device")

    @property
    def variant(self) -> Variant:
        return Variant(self.mode, self.precision, tuple(self.axes.items()))

    @property
    def label(self) -> str:
        of = f"/{self.repeats}" if self.repeats else ""  # --until-known: no number planned
        rounds = f" #{self.replicate}{of}" if self.replicate else ""
        return f"{self.variant.label}{rounds}"

    def elapsed(self, now: float | None = None) -> float | None:
        if self.started_t is None:
            return None
        end = self.ended_t if self.ended_t is not None else (now or time.time())
        return max(0.0, end - self.started_t)


class SessionModel:
    def __init__(self, keep_steps: int = 4096, keep_samples: int = 600) -> None:
        self.collector = Collector(keep_steps=keep_steps, keep_samples=keep_samples, new_run=RunLive)
        self.runs: dict[str, RunLive] = self.collector.state.runs  # type: ignore[assignment]
        self.panels: list[str] = []  # run shown by each panel, left to right
        self._seen: set[str] = set()  # runs given a panel (or kept off screen) once
        self._offscreen: set[str] = set()  # --repeats: queued runs of later rounds
        self.system: dict | None = None
        self.gpu_note: str | None = None
        self.events_seen = 0
        self.latest_t = 0.0  # the latest time any event carried: the charts' "now"
        self._summary: SessionSummary | None = None
        self._stale = False  # events came since the summary was computed
        self._summary_at = 0.0  # when (monotonic), and what it cost (s)
        self.summary_cost = 0.0
        self._worker: threading.Thread | None = None  # the summary being computed (refresh_summary)

    @property
    def ended(self) -> str | None:
        """The session's status once it ended."""
        return self.collector.state.ended

    # ---- folding -------------------------------------------------------------------------
    def add_all(self, batch: list[dict]) -> None:
        for e in batch:
            self.add(e)

    def add(self, e: dict) -> None:
        self.events_seen += 1
        self._stale = True
        if (t := e.get("t")) is not None and t > self.latest_t:
            self.latest_t = t
        steps = self.collector.add(e)  # the run state, the statistics
        kind = e["type"]
        if kind == events.SAMPLE:
            self._sample(e)
            return
        if kind == events.PROBE_INFO and e.get("gpu_available") is False:
            self.gpu_note = f"GPU: n/a ({e.get('reason')})"
        run = e.get("run")
        if run is None:
            for s in steps:  # a job's last steps, joined as the session ended
                self.runs[s["run"]].history.add(s)
            return
        live = self.runs[run]
        if run not in self._seen:
            self._seen.add(run)
            if (live.replicate or 1) == 1:
                self._place(run, e.get("replaces"))
            else:  # a later round waits off screen until it starts
                self._offscreen.add(run)
        elif run in self._offscreen and kind in (events.PHASE, events.RUN_STARTED, events.STEP):
            # Its round began: it takes over the panel. (A queued run stopped before it started
            # says only `finished`: it stays off screen, and the measured run stays in view.)
            self._offscreen.discard(run)
            self._place(run, self._previous_round(live))
        rank = e.get("rank")
        if rank is not None and kind == events.STEP:
            if e.get("phase") == "steady" and not e.get("compile_ms") and not e.get("gap"):
                live.rank_ms.setdefault(rank, deque(maxlen=RANK_SERIES)).append(e["ms"])
        elif kind != events.STEP:
            if rank is None:
                for s in steps:  # a job's last steps, joined at its end
                    live.history.add(s)
            if rank is None or (rank == min(live.ranks) and kind in LEAD):
                self._show(live, e)
            return
        for s in steps:
            live.history.add(s)

    def _previous_round(self, live: RunLive) -> str | None:
        """The panel of the same variant's latest earlier round, which this run replaces."""
        earlier = [r for r in self.runs.values() if r.replicate and r.replicate < live.replicate
                   and r.variant == live.variant and r.run in self.panels]
        return max(earlier, key=lambda r: r.replicate).run if earlier else None

    def _place(self, run: str, replaces: str | None) -> None:
        if replaces in self.panels:
            self.panels[self.panels.index(replaces)] = run
        else:
            self.panels.append(run)

    def _show(self, live: RunLive, e: dict) -> None:
        """A run's event in its charts and its compile pane."""
        live.history.add(e)
        if e["type"] == events.COMPILE:
            live.compiles.append(e)
        elif e["type"] == events.RECOMPILE:
            live.recompiles.append(e)

    def _sample(self, e: dict) -> None:
        self.system = e.get("system")
        devices = {d.get("index"): d for d in e.get("devices", [])}
        for run, values in e.get("runs", {}).items():
            live = self.runs.get(run)
            if live is not None:
                for key, v in (values.get("ranks") or {}).items():
                    if int(key) in live.ranks:
                        live.rank_samples[int(key)] = v
                if "cpu_percent" not in values:  # another node's sample: its ranks' figures only
                    continue
                live.sample = values
                live.devices = [devices[i] for i in values.get("gpus", []) if i in devices]
                live.history.sample(e.get("t", 0.0), values, live.devices)

    # ---- reading -------------------------------------------------------------------------
    def summary(self, max_age: float = 0.0) -> SessionSummary:
        """Every statistic of what was folded. ``max_age`` (the live view): a summary computed
        less than that many seconds ago is returned even if events came since, so a fast
        stream does not recompute medians over thousands of steps at every redraw."""
        now = time.monotonic()
        if self._summary is None or (self._stale and (now - self._summary_at >= max_age or self.ended)):
            self._compute(now)
        return self._summary

    def latest_summary(self) -> SessionSummary:
        """The live view's numbers: the latest summary computed (``refresh_summary`` keeps it
        fresh from a thread); one is computed here only when there is none yet, or when the
        session has ended and events came since (the final numbers are exact)."""
        if self._summary is None or (self.ended and self._stale and not self.busy):
            self._compute(time.monotonic())
        return self._summary

    def refresh_summary(self, max_age: float, done: Callable[[], None] | None = None) -> bool:
        """When the summary is stale and older than ``max_age``, a new one is started on a
        thread (its medians over thousands of steps take tens of ms); ``done`` is called on that
        thread once it is in. While it runs, ``busy`` is true and nothing may be folded.
        Returns whether one was started."""
        if self.busy or not self._stale or time.monotonic() - self._summary_at < max_age:
            return False

        def work() -> None:
            self._compute(time.monotonic())
            self._worker = None  # no longer busy: the fold ``done`` asks for may run
            if done is not None:
                done()

        self._worker = threading.Thread(target=work, daemon=True, name="tuimon-summary")
        self._worker.start()
        return True

    @property
    def busy(self) -> bool:
        return self._worker is not None and self._worker.is_alive()

    def _compute(self, now: float) -> None:
        self._stale = False  # events folded from now on make it stale again
        summary = self.collector.summary()
        self.summary_cost = time.monotonic() - now
        self._summary, self._summary_at = summary, now

    def stats(self, run: str) -> RunStats | None:
        return next((r for r in self.latest_summary().runs if r.run == run), None)

    def rank_own(self, run: str, points: int = 120) -> dict[int, list[float]]:
        """A job's ranks' recent own times (their steps less their waits for slower ranks), as
        the statistics joined them (analysis/stats/ranks.py)."""
        job = self.collector.jobs.get(run)
        if job is None:
            return {}
        return {rank: [x[2] for x in list(rows)[-points:]] for rank, rows in job.series.items()}

    def panel_runs(self) -> list[RunLive]:
        return [self.runs[run] for run in self.panels]

    def close_panel(self, run: str) -> None:
        if run in self.panels:
            self.panels.remove(run)
