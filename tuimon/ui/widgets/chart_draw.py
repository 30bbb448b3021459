"""Line charts with axes in braille (2×4 dots a cell), drawn straight into Textual Strips.

Pure drawing: the columns, the axis range and which steps are outliers come from
``tuimon.analysis.stats.series``; this module only maps them to cells (what a chart shows:
chart_plot.py; its axes' ranges, ticks and labels: chart_axes.py). A chart is a caption row,
plot rows with y ticks on the left, and an x axis row with its labels:

    step ms  ─ median  █ p10–p90  ▲ 2 above, max 4.80
      0.62┤      ▲
          │⠤⠤⠒⠒⠉⠉⠒⠒⠤⠤⣀⣀   (band as a shaded background behind the median line)
      0.48┤
          └0 s────────8 s──────16 s
"""

from __future__ import annotations

import math

from rich.segment import Segment
from rich.style import Style
from textual.strip import Strip

from tuimon.analysis import Column
from tuimon.fmt import fmt_ms
from tuimon.ui.widgets.chart_axes import LABEL, tick, tick_labels, x_axis, y_axis, y_ticks
from tuimon.ui.widgets.chart_plot import Plot, PlotLine

DOTS = ((0x01, 0x08), (0x02, 0x10), (0x04, 0x20), (0x40, 0x80))  # [dot row][dot column]
WARMUP, COMPILE, OUTLIER, PROFILED = "#e0a030", "#c061cb", "#ff5f5f", "#8a8a8a"
PAUSE_BG, TURN_BG, COMPILE_BG = "#3d3418", "#262a33", "#2c1a2e"
AXIS = Style(color="#7a7a7a")
CAPTION = Style(color="#b0b0b0")
TITLE = Style(bold=True)
_styles: dict[tuple, Style] = {}


def style(fg: str | None, bg: str | None = None, bold: bool = False) -> Style:
    key = (fg, bg, bold)
    if key not in _styles:
        _styles[key] = Style(color=fg, bgcolor=bg, bold=bold or None)
    return _styles[key]


def dim(color: str, amount: float = 0.24) -> str:
    """The colour mixed into black: a band's background."""
    r, g, b = (int(color[k:k + 2], 16) for k in (1, 3, 5))
    return f"#{int(r * amount):02x}{int(g * amount):02x}{int(b * amount):02x}"


class Canvas:
    def __init__(self, w: int, h: int) -> None:
        self.w, self.h = w, h
        self.bits = [[0] * w for _ in range(h)]
        self.fg: list[list[str | None]] = [[None] * w for _ in range(h)]
        self.bg: list[list[str | None]] = [[None] * w for _ in range(h)]
        self.char: list[list[str | None]] = [[None] * w for _ in range(h)]

    def vline(self, x: int, y0: int, y1: int, color: str) -> None:
        """Dots from y0 to y1 (either order) in dot column x: a line's step between columns."""
        cx = x >> 1
        if not 0 <= cx < self.w:
            return
        bits, fg, char, col = self.bits, self.fg, self.char, x & 1
        for y in range(max(0, min(y0, y1)), min(self.h * 4 - 1, max(y0, y1)) + 1):
            cy = y >> 2
            if char[cy][cx] is None:
                bits[cy][cx] |= DOTS[y & 3][col]
                fg[cy][cx] = color

    def shade(self, cx: int, rows: range, color: str) -> None:
        if 0 <= cx < self.w:
            for cy in rows:
                if 0 <= cy < self.h:
                    self.bg[cy][cx] = color

    def mark(self, cx: int, cy: int, char: str, color: str) -> None:
        if 0 <= cx < self.w and 0 <= cy < self.h:
            self.char[cy][cx], self.fg[cy][cx] = char, color

    def row(self, cy: int) -> list[Segment]:
        segs: list[Segment] = []
        text, key = [], None
        bits, fg, bg, char = self.bits[cy], self.fg[cy], self.bg[cy], self.char[cy]
        for cx in range(self.w):
            c = char[cx] or (chr(0x2800 + bits[cx]) if bits[cx] else " ")
            k = (fg[cx] if c != " " else None, bg[cx])
            if k != key and text:
                segs.append(Segment("".join(text), style(*key)))
                text = []
            key = k
            text.append(c)
        if text:
            segs.append(Segment("".join(text), style(*key)))
        return segs


class Rows:
    """A chart's rows by what they show, and its y axis, from its last drawing. A live chart's
    redraw changes a few rows at its right edge: the others are not built again, and are the
    same objects as before (the widget repaints only rows that are not). ``finish`` is applied
    to each row built (the widget's own style)."""

    def __init__(self, finish=None) -> None:
        self.finish = finish
        self.last: dict[tuple, Strip] = {}
        self.now: dict[tuple, Strip] = {}
        self.y_range: tuple | None = None  # (log, bottom, top) of the last drawing's axis

    def get(self, key: tuple, build) -> Strip:
        strip = self.now.get(key)  # two blank rows in one drawing: one Strip
        if strip is None:
            strip = self.last.get(key)
        if strip is None:
            strip = build()
            if self.finish is not None:
                strip = self.finish(strip)
        self.now[key] = strip
        return strip

    def done(self) -> None:
        self.last, self.now = self.now, {}


def draw(plot: Plot, width: int, height: int, rows: Rows | None = None) -> list[Strip]:
    """Every row of the chart at this size (caption, plot rows, x axis)."""
    rows = rows if rows is not None else Rows()
    out = _draw(plot, width, height, rows)
    rows.done()
    return out


def _draw(plot: Plot, width: int, height: int, rows: Rows) -> list[Strip]:
    w, h = width - LABEL - 1, height - 2
    lines = [ln for ln in plot.lines if ln.series.count]
    if w < 4 or h < 1 or not lines:
        caption = (Segment(plot.title, TITLE), Segment("  " + plot.empty, CAPTION))
        blank = rows.get(("blank", width), lambda: Strip.blank(width))
        return [rows.get(("caption", width, caption), lambda: Strip(caption).crop_extend(0, width, None))
                ] + [blank] * max(0, height - 1)
    cols = {id(ln): ln.series.columns(plot.x0, plot.x1, 2 * w, plot.by) for ln in lines}
    y_range = y_axis(plot, [c for cs in cols.values() for c in cs], rows.y_range)
    rows.y_range = (plot.log, *y_range)
    canvas = Canvas(w, h)
    _spans(canvas, plot, w)
    outliers: list[float] = []
    for ln in lines:
        outliers += _line(canvas, ln, cols[id(ln)], y_range, plot)
    caption = tuple(_caption(plot, lines, outliers, width))
    out = [rows.get(("caption", width, caption), lambda: Strip(caption).crop_extend(0, width, None))]
    labels = tick_labels(y_ticks(y_range, h, plot.log), plot.unit)
    for cy in range(h):
        head = (labels[cy] + "┤") if cy in labels else " " * LABEL + "│"
        key = (width, head, tuple(canvas.bits[cy]), tuple(canvas.fg[cy]), tuple(canvas.bg[cy]),
               tuple(canvas.char[cy]))
        out.append(rows.get(key, lambda cy=cy, head=head: Strip(
            [Segment(head, AXIS)] + canvas.row(cy), width)))
    axis = " " * LABEL + "└" + x_axis(plot, w)
    out.append(rows.get(("x", width, axis), lambda: Strip([Segment(axis, AXIS)]).crop_extend(0, width, None)))
    return out


def _spans(canvas: Canvas, plot: Plot, w: int) -> None:
    if plot.by != "t" or not plot.spans:
        return
    span = (plot.x1 - plot.x0) or 1.0
    for t0, t1, turn in plot.spans:
        t1 = plot.x1 if t1 is None else t1
        if t1 < plot.x0 or t0 > plot.x1:
            continue
        c0 = max(0, int((t0 - plot.x0) / span * w))
        c1 = min(w - 1, int((t1 - plot.x0) / span * w))
        for cx in range(c0, c1 + 1):
            canvas.shade(cx, range(canvas.h), TURN_BG if turn else PAUSE_BG)


def _line(canvas: Canvas, ln: PlotLine, cols: list[Column | None], y_range: tuple[float, float],
          plot: Plot) -> list[float]:
    """Draws one line; returns the outliers' highest values (one per column above the axis).
    The inner loop runs for every dot column of every chart at every redraw: kept lean."""
    lo, hi = y_range
    rows = canvas.h * 4
    last = rows - 1
    scale = rows / (hi - lo) if hi > lo else 0.0
    log10, log = math.log10, plot.log

    def to_y(v: float) -> int:
        if log:
            v = log10(v) if v > 0 else lo
        y = int((hi - v) * scale) if scale else rows // 2
        return last if y > last else 0 if y < 0 else y

    # Few points (at most one a cell on average): each a point, not a line through a few.
    points = sum(c.n for c in cols if c is not None and c.kind != "compile") <= canvas.w // 2
    band = ln.band and not points
    bands: dict[int, tuple[int, int]] = {}  # cell column: the band's top and bottom dot rows
    top = 10 ** hi if log else hi
    outliers: list[float] = []
    prev: int | None = None
    gap = 0
    for x, c in enumerate(cols):
        if c is None:
            gap += 1
            if gap > 3:  # a short gap (fewer buckets than dot columns) is bridged
                prev = None
            continue
        gap = 0
        color = ln.color
        if ln.kinds and c.kind != "steady":
            color = {"warmup": WARMUP, "compile": COMPILE}.get(c.kind, PROFILED)
        if c.kind == "compile":  # a compile's span shaded, one mark where it ended
            if ln.kinds:
                canvas.shade(x >> 1, range(canvas.h), COMPILE_BG)
            if x + 1 == len(cols) or cols[x + 1] is None or cols[x + 1].kind != "compile":
                canvas.mark(x >> 1, 0, "◆", COMPILE if ln.kinds else ln.color)
                if ln.kinds:
                    _label_span(canvas, cols, x, f"compile step {fmt_ms(c.hi)}")
            prev = None
            continue
        if plot.clip and c.hi > top:
            outliers.append(c.hi)
            if canvas.char[0][x >> 1] is None:  # a compile's ◆ in the same cell stays
                canvas.mark(x >> 1, 0, "▲", OUTLIER)
        y = to_y(c.p50)
        if band and c.p90 > c.p10:
            a, b = to_y(c.p90), to_y(c.p10)
            if (old := bands.get(x >> 1)) is not None:
                a, b = min(a, old[0]), max(b, old[1])
            bands[x >> 1] = (a, b)
        if points:
            canvas.mark(x >> 1, y >> 2, "•", color)
        else:
            canvas.vline(x, y if prev is None else prev, y, color)
        prev = y
    band_bg = dim(ln.color)
    for cx, (a, b) in bands.items():
        canvas.shade(cx, range(a >> 2, (b >> 2) + 1), band_bg)
    return outliers


def _label_span(canvas: Canvas, cols: list[Column | None], end: int, text: str) -> None:
    """Writes ``text`` in the middle row of a compile span that ends at dot column ``end``."""
    start = end
    while start > 0 and cols[start - 1] is not None and cols[start - 1].kind == "compile":
        start -= 1
    c0, c1 = start >> 1, end >> 1
    if c1 - c0 + 1 >= len(text) + 2:
        pos = c0 + (c1 - c0 + 1 - len(text)) // 2
        for k, ch in enumerate(text):
            canvas.mark(pos + k, canvas.h // 2, ch, COMPILE)


def _caption(plot: Plot, lines: list[PlotLine], outliers: list[float], width: int) -> list[Segment]:
    """The title, then what is clipped and the axis kind, then the legend: items that do not
    fit the width are left out whole, not cut (the overlay names its runs on its own line)."""
    segs = [Segment(plot.title, TITLE)]
    items: list[list[Segment]] = []
    if outliers:
        items.append([Segment("  ▲", style(OUTLIER)),
                      Segment(f" {len(outliers)} clipped, max {tick(max(outliers), plot.unit).strip()}",
                              CAPTION)])
    if plot.log:
        items.append([Segment("  log", CAPTION)])
    if plot.legend:  # every run named, or none (the overlay has its own legend line)
        items.append([seg for ln in lines
                      for seg in (Segment("  ━ ", style(ln.color, bold=True)), Segment(ln.label, CAPTION))])
    elif lines and lines[0].band:
        items += [[Segment("  ━", style(lines[0].color)), Segment(" median", CAPTION)],
                  [Segment("  ", CAPTION), Segment("  ", style(None, dim(lines[0].color))),
                   Segment(" p10–p90", CAPTION)]]
    used = len(plot.title)
    for item in items:
        size = sum(len(seg.text) for seg in item)
        if used + size <= width:
            segs += item
            used += size
    return segs
