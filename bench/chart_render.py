"""What one chart costs to draw: tuimon's braille charts against textual-plotext, run by hand:

    .venv/bin/pip install textual-plotext   # only for this comparison (not a dependency)
    .venv/bin/python bench/chart_render.py [--repeat 200]

The same step-time chart (a run of 20 000 steps: warm-up, a compile step, 0.2 % outliers;
median line, p10-p90 band, outliers marked) at a panel's size at 80x24 (36x10), at 120x32
(50x13) and zoomed at 160x45 (150x40). tuimon draws from its bucketed series (stats/series.py)
into Strips; plotext is given the same decimated series (per column: median, p10, p90 and the
outliers), as FIELD.md says it must be, and its build() is turned into Text as
textual-plotext's PlotextPlot.render does. Also plotext fed the raw 20 000 points, for scale.
CPU time per drawing (time.process_time), median over --repeat drawings.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from rich.text import Text  # noqa: E402

from tuimon.analysis.stats.series import StepSeries, axis_range, columns  # noqa: E402
from tuimon.ui.widgets.chart_draw import Plot, PlotLine, Rows, draw  # noqa: E402

SIZES = [(36, 10), (50, 13), (150, 40)]


def make_series(n: int = 20_000) -> tuple[StepSeries, list[float]]:
    rng = random.Random(0)
    s, raw = StepSeries(), []
    t = 0.0
    for i in range(n):
        ms = 3000.0 if i == 0 else 0.5 * (1 + 0.1 * rng.random()) * (10 if rng.random() < 0.002 else 1)
        t += ms / 1000
        s.add(i, t, ms, ms, "compile" if i == 0 else "warmup" if i < 50 else "steady")
        raw.append(ms)
    return s, raw


def cpu_ms(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.process_time()
        fn()
        times.append((time.process_time() - t) * 1000)
    return statistics.median(times)


def ours(s: StepSeries, end: float, w: int, h: int):
    plot = Plot("step ms", [PlotLine("eager", "#4aa3ff", s)], 0.0, end)
    return lambda: draw(plot, w, h)


def ours_kept(s: StepSeries, end: float, w: int, h: int):
    """As the widget redraws: with its rows from the last drawing (chart_draw.Rows), nothing new."""
    plot, rows = Plot("step ms", [PlotLine("eager", "#4aa3ff", s)], 0.0, end), Rows()
    return lambda: draw(plot, w, h, rows)


def ours_cold(s: StepSeries, end: float, w: int, h: int):
    """Binning every bucket again (a new axis: the first drawing after a rescale)."""
    plot = Plot("step ms", [PlotLine("eager", "#4aa3ff", s)], 0.0, end)

    def go():
        s._binned.clear()
        draw(plot, w, h)
    return go


def plotext_decimated(s: StepSeries, end: float, w: int, h: int):
    from textual_plotext.plot import Plot as Plot_

    def go():
        cols = columns(s.buckets(), 0.0, end, w - 8)
        low, top = axis_range(cols) or (0, 1)
        xs = [k for k, c in enumerate(cols) if c is not None and c.kind != "compile"]
        p = Plot_()  # a figure of its own, as PlotextPlot keeps one
        p.plotsize(w, h)
        p.theme("dark")
        p.plot(xs, [min(cols[k].p50, top) for k in xs], marker="braille", color="blue")
        p.plot(xs, [min(cols[k].p10, top) for k in xs], marker="braille", color="gray")
        p.plot(xs, [min(cols[k].p90, top) for k in xs], marker="braille", color="gray")
        out = [k for k in xs if cols[k].hi > top]
        if out:
            p.scatter(out, [top] * len(out), marker="▲", color="red")
        p.ylim(low, top)
        p.title("step ms")
        Text.from_ansi(p.build())
    return go


def plotext_raw(raw: list[float], w: int, h: int):
    from textual_plotext.plot import Plot as Plot_

    def go():
        p = Plot_()
        p.plotsize(w, h)
        p.theme("dark")
        p.plot(raw, marker="braille")
        Text.from_ansi(p.build())
    return go


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=200)
    a = ap.parse_args()
    s, raw = make_series()
    end = s.buckets()[-1].t1
    try:
        import textual_plotext as plotext  # noqa: F401
    except ImportError:
        plotext = None
        print("textual-plotext is not installed: tuimon's charts only")
    print("CPU ms per drawing, median of", a.repeat)
    print("| size | tuimon (same axis) | tuimon (same axis, rows kept) | tuimon (new axis) "
          "| plotext, decimated | plotext, 20k raw |")
    print("|---|---|---|---|---|---|")
    for w, h in SIZES:
        row = [cpu_ms(ours(s, end, w, h), a.repeat), cpu_ms(ours_kept(s, end, w, h), a.repeat),
               cpu_ms(ours_cold(s, end, w, h), a.repeat)]
        if plotext is not None:
            row += [cpu_ms(plotext_decimated(s, end, w, h), max(10, a.repeat // 4)),
                    cpu_ms(plotext_raw(raw, w, h), max(5, a.repeat // 20))]
        print(f"| {w}×{h} | " + " | ".join(f"{x:.2f}" for x in row) + " |")


if __name__ == "__main__":
    main()
