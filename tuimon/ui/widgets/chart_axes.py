"""A chart's axes: the y range (kept while live data still fits it), round y ticks and their
labels, the x axis and its labels. Pure functions of a ``Plot`` (chart_plot.py)."""

from __future__ import annotations

import math

from tuimon.analysis import Column, axis_range
from tuimon.ui.widgets.chart_plot import Plot

LABEL = 6  # width of a y tick label


def tick(value: float, unit: str) -> str:
    """A y tick in at most LABEL characters."""
    a = abs(value)
    if unit in ("%", "°C") or a >= 100:
        text = f"{value:.0f}"
    elif a >= 10:
        text = f"{value:.1f}"
    elif a >= 0.01 or a == 0:
        text = f"{value:.3g}" if a < 1 else f"{value:.2f}"
    else:
        text = f"{value:.0e}".replace("e-0", "e-")
    return text[:LABEL].rjust(LABEL)


def tick_labels(ticks: dict[int, float], unit: str) -> dict[int, str]:
    """Each tick's label, with as many decimals as it takes to tell them apart (a narrow axis,
    1.015 to 1.025, is not labelled 1.02 three times) while they fit in LABEL characters."""
    labels = {row: tick(v, unit) for row, v in ticks.items()}
    if len(set(labels.values())) == len(labels):
        return labels
    for decimals in range(1, LABEL):
        more = {row: f"{v:.{decimals}f}" for row, v in ticks.items()}
        if max(map(len, more.values())) > LABEL:
            break
        if len(set(more.values())) == len(more):
            return {row: text.rjust(LABEL) for row, text in more.items()}
    return labels


def x_label(x: float, plot: Plot) -> str:
    if plot.by == "i":
        x = round(x)
        return f"{x / 1000:.3g}k" if x >= 10_000 else str(x)
    s = max(0.0, x - plot.origin)
    if 0 < s < 1:
        return f"{s * 1000:.3g}ms"
    if s >= 3600:
        return f"{s / 3600:.3g}h"
    return f"{s / 60:.3g}m" if s >= 120 else f"{s:.3g}s"


def y_axis(plot: Plot, cols: list[Column | None], last: tuple | None = None) -> tuple[float, float]:
    """The y axis (log10 values on a log axis): the data's range padded by 8 %, or ``last``
    (the chart's axis in its previous drawing) while the data still fits it and spans at least
    60 % of it, so a live chart keeps its axis as new steps come in: it does not breathe with
    every redraw, and a redraw changes only the rows new data lands in."""
    shown = [c for c in cols if c is not None]
    if not shown:  # nothing in the x range (yet)
        return (-0.5, 0.5) if plot.log else (0.0, 1.0)
    if plot.clip:
        lo, hi = axis_range(cols, plot.log) or (0.0, 1.0)
    else:
        lo, hi = min(c.lo for c in shown), max(c.hi for c in shown)
    if plot.log:
        lo = math.log10(lo) if lo > 0 else -12.0
        hi = math.log10(hi) if hi > 0 else lo + 1
    if last is not None and last[0] == plot.log:
        _, a, b = last
        if a <= lo and hi <= b and hi - lo >= 0.6 * (b - a):
            return a, b
    if plot.log:
        return (lo - 0.5, hi + 0.5) if hi - lo < 1e-9 else (lo, hi)
    if hi - lo < 1e-12:
        pad = abs(hi) * 0.1 or 1.0
        return lo - pad, hi + pad
    pad = (hi - lo) * 0.08
    return (max(0.0, lo - pad) if lo >= 0 else lo - pad), hi + pad


def y_ticks(y_range: tuple[float, float], h: int, log: bool) -> dict[int, float]:
    """Round values (1, 2 or 5 times a power of ten; powers of ten on a log axis) by the row
    they fall in, at least two rows apart."""
    lo, hi = y_range
    want = 2 if h < 5 else 3 if h < 9 else 5
    if log:
        values = [float(k) for k in range(math.ceil(lo), math.floor(hi) + 1)]
        if len(values) < 2:
            values = [lo + (hi - lo) * k / (want - 1) for k in range(want)]
    else:
        raw = (hi - lo) / max(1, want - 1)
        mag = 10 ** math.floor(math.log10(raw)) if raw > 0 else 1.0
        values = []
        first = next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw)
        for step in [first] + [m * mag for m in (5, 2, 1, 0.5, 0.2, 0.1) if m * mag < first]:
            values = [k * step for k in range(math.ceil(lo / step), math.floor(hi / step) + 1)]
            if len(values) >= 2:
                break
    out: dict[int, float] = {}
    for v in values:
        row = min(h - 1, max(0, int((hi - v) / (hi - lo) * h))) if hi > lo else 0
        if all(abs(row - r) >= 2 for r in out):
            out[row] = 10 ** v if log else v
    return out


def x_axis(plot: Plot, w: int) -> str:
    line = ["─"] * w
    labels = [(0, x_label(plot.x0, plot))]
    if w >= 24:
        labels.append((w // 2, x_label((plot.x0 + plot.x1) / 2, plot)))
    end = x_label(plot.x1, plot)
    labels.append((w - len(end), end))
    taken = -1
    for pos, text in labels:
        pos = max(pos, taken + 2 if taken >= 0 else 0)
        if pos + len(text) > w:
            continue
        line[pos:pos + len(text)] = list(text)
        taken = pos + len(text)
    return "".join(line)
