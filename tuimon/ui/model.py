"""What the TUI shows, folded from events; no Textual here, so it is tested without a screen.

Statistics come from ``stats.Collector`` (bounded: recent steps only), never recomputed here;
this module adds what only a live view needs: each run's state and elapsed time, its chart
history (ui/history.py), the latest probe sample, and which run each panel shows.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from tuimon import events
from tuimon.analysis import Collector, RunStats, SessionSummary
from tuimon.ui.history import RunHistory
from tuimon.ui.rank_model import RankLive, job_state, rank_event, rank_samples
from tuimon.variants import Variant

COMPILES = 200  # compile / recompile events kept per run for the compile pane


@dataclass
class RunLive:
    run: str
    mode: str
    precision: str
    state: str = "queued"  # queued, building, compiling, warmup, steady, paused, done, stopped, failed
    device: str | None = None
    started_t: float | None = None  # wall clock of run_started / first phase
    ended_t: float | None = None
    last_t: float | None = None
    steps: int = 0
    compile_id: str | None = None
    history: RunHistory = field(default_factory=RunHistory)  # what the charts draw
    sample: dict | None = None  # this run's part of the latest probe sample
    devices: list[dict] = field(default_factory=list)  # the GPUs it uses, latest sample
    warnings: list[str] = field(default_factory=list)
    error: str | None = None
    hung: float | None = None  # t of a hang warning (no step for --hang-timeout), until a later step
    notes: list[str] = field(default_factory=list)
    # While compiling: what torch is doing now, and since when this compile id started.
    compile_phase: str | None = None
    compile_backward: bool = False
    compile_since: float | None = None
    compiles: deque = field(default_factory=lambda: deque(maxlen=COMPILES))  # compile events
    recompiles: deque = field(default_factory=lambda: deque(maxlen=COMPILES))  # recompile events
    profiles: list[dict] = field(default_factory=list)  # profile events, done or failed
    profiling: bool = False  # a capture window is open
    replicate: int | None = None  # --repeats: its round, and how many there are
    repeats: int | None = None
    # A torchrun job (ui/rank_model.py): its ranks; its plots show the job's steps (the slowest
    # rank's), its state comes from the ranks until the job's own end.
    ranks: dict[int, RankLive] = field(default_factory=dict)
    world_size: int | None = None
    axes: dict[str, str] = field(default_factory=dict)  # its --set axis values

    @property
    def variant(self) -> Variant:
        return Variant(self.mode, self.precision, tuple(self.axes.items()))

    @property
    def label(self) -> str:
        rounds = f" #{self.replicate}/{self.repeats}" if self.replicate else ""
        return f"{self.variant.label}{rounds}"

    @property
    def active(self) -> bool:
        return self.state not in ("done", "stopped", "failed")

    def elapsed(self, now: float | None = None) -> float | None:
        if self.started_t is None:
            return None
        end = self.ended_t if self.ended_t is not None else (now or time.time())
        return max(0.0, end - self.started_t)


class SessionModel:
    def __init__(self, keep_steps: int = 4096, keep_samples: int = 600) -> None:
        self.collector = Collector(keep_steps=keep_steps, keep_samples=keep_samples)
        self.runs: dict[str, RunLive] = {}
        self.panels: list[str] = []  # run shown by each panel, left to right
        self._offscreen: set[str] = set()  # --repeats: queued runs of later rounds
        self.system: dict | None = None
        self.gpu_note: str | None = None
        self.session_warnings: list[str] = []
        self.ended: str | None = None  # session status once it ended
        self.events_seen = 0
        self.latest_t = 0.0  # the latest time any event carried: the charts' "now"
        self._summary: SessionSummary | None = None
        self._stale = False  # events came since the summary was computed
        self._summary_at = 0.0  # when (monotonic), and what it cost (s)
        self.summary_cost = 0.0
        self._worker: threading.Thread | None = None  # the summary being computed (refresh_summary)

    # ---- folding -------------------------------------------------------------------------
    def add_all(self, batch: list[dict]) -> None:
        for e in batch:
            self.add(e)

    def add(self, e: dict) -> None:
        self.events_seen += 1
        self._stale = True
        if (t := e.get("t")) is not None and t > self.latest_t:
            self.latest_t = t
        joined = self.collector.add(e)
        kind = e["type"]
        if kind == events.SAMPLE:
            self._sample(e)
            return
        if kind == events.PROBE_INFO:
            if e.get("gpu_available") is False:
                self.gpu_note = f"GPU: n/a ({e.get('reason')})"
            return
        if kind == events.SESSION_ENDED:
            self.ended = e.get("status")
            for s in joined or []:  # a job's last steps, joined as the session ended
                if s["run"] in self.runs:
                    self._apply(self.runs[s["run"]], s)
            return
        run = e.get("run")
        if run is None:
            if kind == events.WARNING and e.get("text") not in self.session_warnings:
                self.session_warnings.append(e["text"])
            return
        live = self.runs.get(run)
        if live is None:
            live = self.runs[run] = RunLive(run, e.get("mode", "?"), e.get("precision", "?"),
                                            replicate=e.get("replicate"), repeats=e.get("repeats"),
                                            axes={str(k): str(v) for k, v in
                                                  (e.get("axes") or {}).items()})
            if (live.replicate or 1) == 1:
                self._place(run, e.get("replaces"))
            else:  # a later round waits off screen until it starts
                self._offscreen.add(run)
        elif run in self._offscreen and kind in (events.PHASE, events.RUN_STARTED, events.STEP):
            # Its round began: it takes over the panel. (A queued run stopped before it started
            # says only `finished`: it stays off screen, and the measured run stays in view.)
            self._offscreen.discard(run)
            self._place(run, self._previous_round(live))
        if e.get("rank") is not None:
            self._rank(live, e, joined)
            return
        if joined and kind != events.STEP:
            for s in joined:  # a job's last steps, joined at its end
                self._apply(live, s)
        self._apply(live, e)

    def _rank(self, live: RunLive, e: dict, joined: list[dict] | None) -> None:
        """A rank's event: its own row; the job's panel from its lowest rank (device, notes,
        compiles), its joined steps and its ranks' states."""
        rank = rank_event(live.ranks, e)
        kind = e["type"]
        lead = e["rank"] == min(live.ranks)
        if kind == events.RUN_STARTED:
            live.world_size = e.get("world_size") or live.world_size
            if lead:
                self._apply(live, e)
            live.started_t = live.started_t or e.get("t")
        elif kind in (events.WARNING, events.PROFILE) or (lead and kind in (
                events.COMPILE_PHASE, events.COMPILE, events.RECOMPILE, events.PHASE)):
            self._apply(live, e)
        elif kind == events.FAILED and live.error is None:
            live.error = f"rank {rank.rank}: {rank.error}"
        for s in joined or []:
            self._apply(live, s)
        if live.state not in ("done", "stopped", "failed"):
            live.state = job_state(live.ranks) or live.state

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

    def _apply(self, live: RunLive, e: dict) -> None:
        kind = e["type"]
        t = e.get("t")
        live.history.add(e)
        if kind == events.STEP:
            live.steps = e["i"] + 1
            if live.hung is not None and t is not None and t > live.hung:
                live.hung = None  # steps sent at the stop ended before the warning
            live.last_t = t
            if live.state not in ("paused",):
                live.state = e.get("phase", live.state)
        elif kind == events.PHASE:
            live.state = "waiting turn" if e.get("turn") else e["phase"]
            if e["phase"] == "compiling":
                if e.get("compile_id") and e.get("compile_id") != live.compile_id:
                    live.compile_since = t
                live.compile_id = e.get("compile_id") or live.compile_id
                live.compile_backward = bool(e.get("backward"))
            else:
                live.compile_id = live.compile_phase = live.compile_since = None
            if live.started_t is None:
                live.started_t = t
        elif kind == events.COMPILE_PHASE:
            if e.get("compile_id") != live.compile_id or live.compile_since is None:
                live.compile_since = t
            live.compile_id = e.get("compile_id")
            live.compile_phase = e.get("phase")
            live.compile_backward = bool(e.get("backward"))
        elif kind == events.COMPILE:
            live.compiles.append(e)
        elif kind == events.RECOMPILE:
            live.recompiles.append(e)
        elif kind == events.PROFILE:
            live.profiling = e.get("state") == "started"
            if e.get("state") in ("done", "failed"):
                live.profiles = [*live.profiles[-9:], e]
        elif kind == events.RUN_STARTED:
            live.device = e.get("device_name") or e.get("device")
            live.notes = list(e.get("notes") or [])
        elif kind == events.FINISHED:
            live.state = "stopped" if e.get("reason") == "stopped" else "done"
            live.ended_t = t
        elif kind == events.FAILED:
            live.state = "failed"
            live.ended_t = live.ended_t or t
            live.error = e.get("what") or f"{e.get('error')}: {e.get('message')}"
        elif kind == events.RUN_EXITED and live.ended_t is None:
            live.ended_t = t
        elif kind == events.WARNING:
            if e.get("hung"):
                live.hung = t
            if e.get("text") not in live.warnings:
                live.warnings.append(e["text"])

    def _sample(self, e: dict) -> None:
        self.system = e.get("system")
        devices = {d.get("index"): d for d in e.get("devices", [])}
        for run, values in e.get("runs", {}).items():
            live = self.runs.get(run)
            if live is not None:
                if values.get("ranks"):
                    rank_samples(live.ranks, values["ranks"])
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
