"""A run's history for the charts, folded from its events in bounded memory (no Textual here):
step times and losses over the whole run (stats.series buckets), its pauses and turn waits,
the phases of the compile under way, and its probe samples (CPU %, GPU util, VRAM, temperature).
"""

from __future__ import annotations

from collections import deque

from tuimon import events
from tuimon.analysis import StepSeries, step_kind

SPANS = 1024  # pauses and turn waits kept per run (the latest)
PHASES = 512  # compile phase changes kept for the compile under way
PROBES = ("cpu", "util", "vram", "temp")

# The compile trace's phase names (runner/compile_trace.py) by the compile pane's families.
PHASE_FAMILY = {"dynamo": "dynamo", "dynamo trace": "dynamo", "backend": "aot",
                "aot autograd": "aot", "aot partition": "aot", "inductor lowering": "inductor",
                "inductor codegen": "codegen", "C++/Triton compile": "codegen"}


class RunHistory:
    def __init__(self) -> None:
        self.steps = StepSeries()  # step ms, by kind (compile, warmup, steady, profiled, gap)
        self.loss = StepSeries()
        self.spans: deque[list] = deque(maxlen=SPANS)  # [t0, t1 or None (still paused), turn]
        self.compile_t0: float | None = None  # start of the compile under way
        self.phases: deque[tuple[float, str, bool]] = deque(maxlen=PHASES)  # (t, family, backward)
        self.probes = {name: StepSeries() for name in PROBES}
        self.first_t: float | None = None  # when its first step began (the charts' origin)
        self._samples = 0

    def add(self, e: dict) -> None:
        kind, t = e["type"], e.get("t")
        if kind == events.STEP:  # thousands a second: kept short
            ms = e.get("ms") or 0.0
            if self.first_t is None:
                self.first_t = t - ms / 1000.0
            self.compile_t0 = None  # a step ended: the compile in it is over
            i = e["i"]
            self.steps.add(i, t, ms, ms, step_kind(e))
            if (loss := e.get("loss")) is not None:
                self.loss.add(i, t, ms, loss, "steady")
        elif kind == events.PHASE:
            paused = e.get("phase") == "paused"
            self._end_span(t, still_paused=paused)
            if paused:
                self.spans.append([t, None, bool(e.get("turn"))])
                self.steps.pause()
                self.loss.pause()
            if e.get("phase") == "compiling":
                if self.compile_t0 is None:
                    self.compile_t0 = t
                    self.phases.clear()
            else:
                self.compile_t0 = None
        elif kind == events.COMPILE_PHASE:
            if self.compile_t0 is None:
                self.compile_t0 = t
                self.phases.clear()
            family = "backward" if e.get("backward") else PHASE_FAMILY.get(e.get("phase"), "other")
            self.phases.append((t, family, bool(e.get("backward"))))
        elif kind in (events.FINISHED, events.FAILED, events.RUN_EXITED):
            self._end_span(t, still_paused=False)
            self.compile_t0 = None

    def _end_span(self, t: float | None, still_paused: bool) -> None:
        if self.spans and self.spans[-1][1] is None and not still_paused and t is not None:
            self.spans[-1][1] = t

    def sample(self, t: float, values: dict, devices: list[dict]) -> None:
        """One probe sample of this run: its process tree's CPU %, and over its GPUs the mean
        utilisation, the VRAM in use (summed, GiB) and the hottest temperature."""
        i = self._samples
        self._samples += 1
        if values.get("cpu_percent") is not None:
            self.probes["cpu"].add(i, t, 0.0, values["cpu_percent"], "steady")
        utils = [d["util_gpu"] for d in devices if d.get("util_gpu") is not None]
        if utils:
            self.probes["util"].add(i, t, 0.0, sum(utils) / len(utils), "steady")
        mems = [d["mem_used"] for d in devices if d.get("mem_used") is not None]
        if mems:
            self.probes["vram"].add(i, t, 0.0, sum(mems) / 2**30, "steady")
        temps = [d["temp_c"] for d in devices if d.get("temp_c") is not None]
        if temps:
            self.probes["temp"].add(i, t, 0.0, max(temps), "steady")

    def compile_bar(self, now: float) -> list[tuple[str, float]]:
        """The compile under way as (family, seconds) segments in order, the last one up to
        ``now``; before the first phase is said, one 'starting' segment."""
        if self.compile_t0 is None:
            return []
        points = list(self.phases)
        out: list[tuple[str, float]] = []
        if not points or points[0][0] > self.compile_t0:
            first = points[0][0] if points else now
            out.append(("starting", max(0.0, first - self.compile_t0)))
        for k, (t, family, _) in enumerate(points):
            end = points[k + 1][0] if k + 1 < len(points) else now
            if out and out[-1][0] == family:
                out[-1] = (family, out[-1][1] + max(0.0, end - t))
            else:
                out.append((family, max(0.0, end - t)))
        return out
