"""What a chart shows: its lines (each a step series, in a colour, with or without its band) and
how its axes are laid out. Made by plots.py and overlay.py, drawn by chart_draw.py."""

from __future__ import annotations

from dataclasses import dataclass, field

from tuimon.analysis import StepSeries


@dataclass
class PlotLine:
    label: str
    color: str
    series: StepSeries
    band: bool = True  # the p10–p90 band behind the median
    kinds: bool = True  # warm-up, compile and profiled steps drawn in their own colours


@dataclass
class Plot:
    title: str
    lines: list[PlotLine]
    x0: float
    x1: float
    by: str = "t"  # "t": wall time (labels: seconds since origin), "i": step index
    origin: float = 0.0
    spans: list = field(default_factory=list)  # [t0, t1 or None, turn]: pauses and turn waits
    log: bool = False
    unit: str = "ms"
    clip: bool = True  # outliers clipped and marked, not scaling the axis
    empty: str = "no steps yet"
    legend: bool = False  # name each line in the caption (overlays)
