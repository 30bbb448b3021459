"""What each chart plots, built from the model's runs (no drawing here): a panel's step time and
loss on its run's own clock, and the overlays of every run on one axis, by step or by wall time.
"""

from __future__ import annotations

import math

from tuimon.ui.model import RunLive, SessionModel
from tuimon.ui.widgets.chart_draw import Plot, PlotLine

PALETTE = ("#4aa3ff", "#ff9f43", "#2ecc71", "#e056fd", "#f1c40f", "#00d2d3", "#ff6b81", "#a29bfe")
PROBES = {  # name: (title, unit)
    "cpu": ("CPU % (process tree)", "%"),
    "util": ("GPU util %", "%"),
    "vram": ("VRAM GiB", "GiB"),
    "temp": ("GPU °C", "°C"),
}


NICE = (1.0, 1.2, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0)


def ahead(span: float) -> float:
    """A live chart's x extent: the span rounded up to a nice value (at most 25 % more), so
    its axis stays put for a while and a redraw changes only the columns new data lands in."""
    if span <= 0:
        return span
    mag = 10 ** math.floor(math.log10(span))
    return next(m * mag for m in NICE if m * mag >= span * 0.9999)


def color(model: SessionModel, run: str) -> str:
    """A variant keeps its colour in every chart, across restarts and --repeats rounds: by the
    order variants appeared."""
    live = model.runs.get(run)
    if live is None:
        return PALETTE[0]
    variants = list(dict.fromkeys((r.mode, r.precision) for r in model.runs.values()))
    return PALETTE[variants.index((live.mode, live.precision)) % len(PALETTE)]


def _end(live: RunLive, model: SessionModel) -> float:
    """A run's right edge: its end, or the latest time the session has said anything."""
    if not live.active and live.last_t is not None:
        return live.last_t  # its last step (tear-down is not charted)
    if live.ended_t is not None:
        return live.ended_t
    return max(model.latest_t, live.last_t or 0.0)


def run_span(model: SessionModel, live: RunLive) -> tuple[float, float]:
    """A panel's time axis: its run's first step to its last (ahead of it while it runs)."""
    h = live.history
    end = _end(live, model)
    start = h.first_t if h.first_t is not None else end
    span = max(end - start, 1e-3)
    return start, start + (ahead(span) if live.active else span)


def step_plot(model: SessionModel, live: RunLive) -> Plot:
    start, end = run_span(model, live)
    return Plot("step ms", [PlotLine(live.label, color(model, live.run), live.history.steps)],
                start, end, origin=start, spans=list(live.history.spans))


def loss_plot(model: SessionModel, live: RunLive, log: bool) -> Plot:
    start, end = run_span(model, live)
    line = PlotLine(live.label, color(model, live.run), live.history.loss, kinds=False)
    return Plot("loss", [line], start, end, origin=start, spans=list(live.history.spans),
                log=log, unit="loss", clip=False, empty="no loss yet")


def overlay_lines(model: SessionModel, runs: list[RunLive], series: str) -> list[PlotLine]:
    lines = []
    for live in runs:
        s = live.history.probes[series] if series in PROBES else getattr(live.history, series)
        lines.append(PlotLine(live.label, color(model, live.run), s, band=False,
                              kinds=False))
    return lines


def last_step(runs: list[RunLive]) -> float:
    last = max(max((r.steps for r in runs), default=1), 2)
    return ahead(last) if any(r.active for r in runs) else last


def overlay_by_step(model: SessionModel, runs: list[RunLive]) -> Plot:
    return Plot("step ms by step", overlay_lines(model, runs, "steps"), 0, last_step(runs), by="i",
                legend=True)


def session_span(model: SessionModel, runs: list[RunLive], probe: str | None = None) -> tuple[float, float]:
    """The overlay's time axis: the session's first step (or first probe sample) to now."""
    starts = [r.history.first_t for r in runs if r.history.first_t is not None]
    if probe is not None:  # a probe chart shows the compiles and builds before the first step too
        starts += [s.buckets()[0].t0 for r in runs if (s := r.history.probes[probe]).count]
    start = min(starts) if starts else model.latest_t
    end = max((_end(r, model) for r in runs), default=start)
    span = max(end - start, 1e-3)
    return start, start + (ahead(span) if any(r.active for r in runs) else span)


def overlay_by_time(model: SessionModel, runs: list[RunLive]) -> Plot:
    start, end = session_span(model, runs)
    return Plot("step ms by wall time", overlay_lines(model, runs, "steps"), start, end,
                origin=start, legend=True)


def overlay_loss(model: SessionModel, runs: list[RunLive], log: bool) -> Plot:
    return Plot("loss by step", overlay_lines(model, runs, "loss"), 0, last_step(runs), by="i",
                log=log, unit="loss", clip=False, legend=True, empty="no loss yet")


def overlay_probe(model: SessionModel, runs: list[RunLive], name: str) -> Plot:
    start, end = session_span(model, runs, name)
    title, unit = PROBES[name]
    return Plot(title, overlay_lines(model, runs, name), start, end, origin=start, unit=unit,
                clip=False, legend=True, empty="no samples yet")
