"""The overlay view (key o): every run on one axis, a colour each, the legend naming them (and
what a compiled run did to each phase of the step: "fwd 1.62× · bwd 1.21× · ...") —
step time by step and by wall time (a compiled run's line starts late by its compile), loss by
step, and a system box: CPU % of each run's process tree, and with GPUs their utilisation, VRAM
and temperature."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Grid, Vertical
from textual.widgets import Static

from tuimon.report.phase_text import speedups_text
from tuimon.ui.model import RunLive, SessionModel
from tuimon.ui.widgets import plots
from tuimon.ui.widgets.chart import Chart
from tuimon.ui.widgets.chart_draw import Plot
from tuimon.ui.widgets.redraw import update

GPU_PROBES = ("util", "vram", "temp")


class OverlayView(Vertical):
    DEFAULT_CSS = """
    OverlayView { height: 1fr; }
    OverlayView #overlay-legend { height: auto; max-height: 3; }
    OverlayView Grid { grid-size: 2 2; grid-gutter: 0 1; height: 1fr; }
    OverlayView Chart { height: 1fr; }
    OverlayView Chart:focus { background: $boost; }
    OverlayView #overlay-system { height: 1fr; }
    """

    def compose(self) -> ComposeResult:
        yield Static(id="overlay-legend")
        with Grid():
            yield Chart("step time by step", classes="by-step", focusable=True)
            yield Chart("step time by wall time", classes="by-time", focusable=True)
            yield Chart("loss by step", classes="loss", focusable=True)
            with Vertical(id="overlay-system"):
                yield Chart("CPU %", classes="probe-cpu", focusable=True)
                for name in GPU_PROBES:
                    yield Chart(plots.PROBES[name][0], classes=f"probe-{name}", focusable=True)

    def charts(self) -> list[Chart]:
        return [c for c in self.query(Chart) if c.display]

    def show(self, model: SessionModel, runs: list[RunLive], log_loss: bool,
             half: int | None = None) -> None:
        """Every chart, or with ``half`` (0 or 1) every other one (ui/views.py)."""
        legend = Text()
        for live in runs:
            legend.append("━━ ", style=f"bold {plots.color(model, live.run)}")
            legend.append(f"{live.label}")
            stats = model.stats(live.run)
            if stats is not None and (by_part := speedups_text(stats)):
                legend.append(f" ({by_part})", style="dim")  # what compile did to each phase
            legend.append("   ")
        legend.append("◆ compile  ▲ clipped", style="dim")
        update(self.query_one("#overlay-legend", Static), legend)
        gpu = any(r.history.probes["util"].count or r.history.probes["vram"].count for r in runs)
        cpu = self.query_one(".probe-cpu", Chart)
        if cpu.display == gpu:  # the probe charts switch (CPU to GPU): all drawn at once
            half = None
        cpu.display = not gpu
        for name in GPU_PROBES:
            self.query_one(f".probe-{name}", Chart).display = gpu
        for k, chart in enumerate(self.charts()):
            if half is None or k % 2 == half:
                chart.plot(self._plot(chart, model, runs, log_loss))

    @staticmethod
    def _plot(chart: Chart, model: SessionModel, runs: list[RunLive], log_loss: bool) -> Plot:
        if chart.has_class("by-step"):
            return plots.overlay_by_step(model, runs)
        if chart.has_class("by-time"):
            return plots.overlay_by_time(model, runs)
        if chart.has_class("loss"):
            return plots.overlay_loss(model, runs, log_loss)
        probe = next(c for c in chart.classes if c.startswith("probe-"))
        return plots.overlay_probe(model, runs, probe.removeprefix("probe-"))
