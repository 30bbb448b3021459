"""What each chart plots, built from the model's runs (no drawing here): a panel's step time and
loss on its run's own clock, and the overlays of every run on one axis, by step or by wall time.
"""

from __future__ import annotations

from tuimon.ui.model import RunLive, SessionModel
from tuimon.ui.widgets.chart_draw import Plot, PlotLine

PALETTE = ("#4aa3ff", "#ff9f43", "#2ecc71", "#e056fd", "#f1c40f", "#00d2d3", "#ff6b81", "#a29bfe")
PROBES = {  # name: (title, unit)
    "cpu": ("CPU % (process tree)", "%"),
    "util": ("GPU util %", "%"),
    "vram": ("VRAM GiB", "GiB"),
    "temp": ("GPU °C", "°C"),
}


def color(model: SessionModel, run: str) -> str:
    """Each run keeps its colour in every chart: by the order runs appeared."""
    return PALETTE[list(model.runs).index(run) % len(PALETTE)] if run in model.runs else PALETTE[0]


def _end(live: RunLive, model: SessionModel) -> float:
    """A run's right edge: its end, or the latest time the session has said anything."""
    if not live.active and live.last_t is not None:
        return live.last_t  # its last step (tear-down is not charted)
    if live.ended_t is not None:
        return live.ended_t
    return max(model.latest_t, live.last_t or 0.0)


def step_plot(model: SessionModel, live: RunLive) -> Plot:
    h = live.history
    start = h.first_t if h.first_t is not None else _end(live, model)
    return Plot("step ms", [PlotLine(live.label, color(model, live.run), h.steps.buckets())],
                start, max(_end(live, model), start + 0.01), origin=start, spans=list(h.spans))


def loss_plot(model: SessionModel, live: RunLive, log: bool) -> Plot:
    h = live.history
    start = h.first_t if h.first_t is not None else _end(live, model)
    return Plot("loss", [PlotLine(live.label, color(model, live.run), h.loss.buckets(), kinds=False)],
                start, max(_end(live, model), start + 0.01), origin=start, spans=list(h.spans),
                log=log, unit="loss", clip=False, empty="no loss yet")


def overlay_lines(model: SessionModel, runs: list[RunLive], series: str) -> list[PlotLine]:
    lines = []
    for live in runs:
        s = live.history.probes[series] if series in PROBES else getattr(live.history, series)
        lines.append(PlotLine(live.label, color(model, live.run), s.buckets(), band=False,
                              kinds=False))
    return lines


def overlay_by_step(model: SessionModel, runs: list[RunLive]) -> Plot:
    last = max((r.steps for r in runs), default=1)
    return Plot("step ms by step", overlay_lines(model, runs, "steps"), 0, max(last, 2), by="i",
                legend=True)


def session_span(model: SessionModel, runs: list[RunLive]) -> tuple[float, float]:
    starts = [r.history.first_t for r in runs if r.history.first_t is not None]
    start = min(starts) if starts else model.latest_t
    end = max((_end(r, model) for r in runs), default=start)
    return start, max(end, start + 0.01)


def overlay_by_time(model: SessionModel, runs: list[RunLive]) -> Plot:
    start, end = session_span(model, runs)
    return Plot("step ms by wall time", overlay_lines(model, runs, "steps"), start, end,
                origin=start, legend=True)


def overlay_loss(model: SessionModel, runs: list[RunLive], log: bool) -> Plot:
    last = max((r.steps for r in runs), default=1)
    return Plot("loss by step", overlay_lines(model, runs, "loss"), 0, max(last, 2), by="i",
                log=log, unit="loss", clip=False, legend=True, empty="no loss yet")


def overlay_probe(model: SessionModel, runs: list[RunLive], name: str) -> Plot:
    start, end = session_span(model, runs)
    title, unit = PROBES[name]
    return Plot(title, overlay_lines(model, runs, name), start, end, origin=start, unit=unit,
                clip=False, legend=True, empty="no samples yet")
