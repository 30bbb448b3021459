"""What the TUI shows, folded from events; no Textual here, so it is tested without a screen.

Statistics come from ``stats.Collector`` (bounded: recent steps only), never recomputed here;
this module adds what only a live view needs: each run's state and elapsed time, the recent
step-time and loss series for the plots, the latest probe sample, and which run each panel shows.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, field

from tuimon import events
from tuimon.session.stats import Collector, RunStats, SessionSummary, is_measured
from tuimon.variants import Variant

SERIES = 512  # points kept per plot; a plot decimates them to its width
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
    step_ms: deque = field(default_factory=lambda: deque(maxlen=SERIES))
    loss: deque = field(default_factory=lambda: deque(maxlen=SERIES))
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
        self._summary: SessionSummary | None = None

    # ---- folding -------------------------------------------------------------------------
    def add_all(self, batch: list[dict]) -> None:
        for e in batch:
            self.add(e)

    def add(self, e: dict) -> None:
        self.events_seen += 1
        self.collector.add(e)
        self._summary = None
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
        self._apply(live, e)

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
        if kind == events.STEP:
            live.steps = e["i"] + 1
            if live.hung is not None and t is not None and t > live.hung:
                live.hung = None  # steps sent at the stop ended before the warning
            live.last_t = t
            if is_measured(e):  # a compile spike would flatten the plot of everything else
                live.step_ms.append(e["ms"])
            if e.get("loss") is not None:
                live.loss.append(e["loss"])
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
                live.sample = values
                live.devices = [devices[i] for i in values.get("gpus", []) if i in devices]

    # ---- reading -------------------------------------------------------------------------
    def summary(self) -> SessionSummary:
        if self._summary is None:
            self._summary = self.collector.summary()
        return self._summary

    def stats(self, run: str) -> RunStats | None:
        return next((r for r in self.summary().runs if r.run == run), None)

    def panel_runs(self) -> list[RunLive]:
        return [self.runs[run] for run in self.panels]

    def close_panel(self, run: str) -> None:
        if run in self.panels:
            self.panels.remove(run)
