"""What a redraw does, so that the UI stays light at thousands of steps a second (bench/ui_budget.py
measures it): a chart builds and repaints only the rows that changed and keeps its y axis while
the data fits; the timer's redraws draw half the charts each, in turn, a key's all of them; a
panel's subtitle repaints its bottom border only; the comparison strip does not shrink."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from rich.text import Text
from test_charts import Feed, series, settle
from textual.app import App, ComposeResult
from textual.geometry import Region

from tuimon.ui.app import TuimonApp
from tuimon.ui.widgets.chart import Chart
from tuimon.ui.widgets.chart_draw import Plot, PlotLine, Rows, draw
from tuimon.ui.widgets.comparison import ComparisonStrip
from tuimon.ui.widgets.run_panel import RunPanel

T0 = 1_800_000_000.0
RUNS = [("eager", "fp32"), ("default", "fp32"), ("eager", "amp"), ("default", "amp")]


# ---- a chart's rows and axis ---------------------------------------------------------------
def grow(s, start: int, count: int, value=lambda i: 1.0 + 0.05 * (i % 7) / 7) -> None:
    for i in range(start, start + count):
        s.add(i, 100.0 + (i + 1) * 0.001, 1.0, value(i), "steady")


def test_a_redraw_builds_again_only_the_rows_that_changed():
    s = series([1.0 + 0.05 * (i % 7) / 7 for i in range(1000)])
    plot = Plot("step ms", [PlotLine("a", "#4aa3ff", s)], 100.0, 104.0)  # room on the right
    rows = Rows()
    first = draw(plot, 60, 10, rows)
    again = draw(plot, 60, 10, rows)
    assert all(a is b for a, b in zip(first, again, strict=True))  # nothing new: the same rows
    grow(s, 1000, 500)
    later = draw(plot, 60, 10, rows)
    changed = [y for y, (a, b) in enumerate(zip(again, later, strict=True)) if a is not b]
    assert changed and len(changed) < len(later)
    assert later[-1] is again[-1]  # the x axis did not move
    fresh = draw(plot, 60, 10)  # without the memo: the same picture
    assert [r.text for r in fresh] == [r.text for r in later]


def test_the_y_axis_keeps_its_range_while_the_data_fits_and_refits_when_it_does_not():
    s = series([1.0 + 0.1 * (i % 10) / 10 for i in range(500)])
    plot = Plot("loss", [PlotLine("a", "#4aa3ff", s)], 100.0, 104.0, clip=False)
    rows = Rows()
    draw(plot, 60, 10, rows)
    axis = rows.y_range
    assert axis[1] < 1.0 and axis[2] > 1.09
    grow(s, 500, 500, lambda i: 1.02 + 0.06 * (i % 10) / 10)  # inside the range: kept
    draw(plot, 60, 10, rows)
    assert rows.y_range == axis
    grow(s, 1000, 200, lambda i: 3.0)  # above it: the axis grows
    draw(plot, 60, 10, rows)
    assert rows.y_range[2] > 3.0
    narrow = series([1.0 + 0.1 * (i % 10) / 10 for i in range(500)])  # the data spans < 60 %
    draw(Plot("loss", [PlotLine("a", "#4aa3ff", narrow)], 100.0, 104.0, clip=False), 60, 10, rows)
    assert rows.y_range[2] < 1.2
    log = Plot("loss", [PlotLine("a", "#4aa3ff", narrow)], 100.0, 104.0, clip=False, log=True)
    draw(log, 60, 10, rows)  # another kind of axis: never the linear one's range
    assert rows.y_range[0] is True and rows.y_range[2] < 0.1


# ---- the app's redraws ---------------------------------------------------------------------
def steps(run: str, i0: int, n: int, t: float) -> list[dict]:
    return [{"type": "step", "t": t + (i0 + k) * 0.001, "run": run, "i": i0 + k, "ms": 1.0,
             "data_ms": 0.01, "n": 32, "loss": 2.0 / (1 + (i0 + k) / 100),
             "phase": "warmup" if i0 + k < 5 else "steady"} for k in range(n)]


async def test_timer_redraws_draw_half_the_charts_in_turn_and_a_key_draws_them_all(tmp_path: Path):
    feed = Feed(tmp_path)
    app = TuimonApp(feed, fps=0.01)  # no timer of its own in the test: its ticks are ours
    names = [f"{m}-{p}" for m, p in RUNS]
    async with app.run_test(size=(160, 45)) as pilot:
        feed.deliver([e for name, (m, p) in zip(names, RUNS, strict=True) for e in (
            {"type": "run_queued", "t": T0, "run": name, "mode": m, "precision": p},
            {"type": "run_started", "t": T0, "run": name, "mode": m, "precision": p, "device": "cpu"},
            *steps(name, 0, 200, T0))])
        await settle(app, pilot, 4)
        app.fps = 4  # as a user's default, for the tick's choice; its timer stays idle
        panels = list(app.query(RunPanel))
        assert len(panels) == 4

        def drawn() -> list:
            return [p.query_one(".steps", Chart).data for p in panels]

        before = drawn()
        feed.deliver([e for name in names for e in steps(name, 200, 100, T0)])
        await pilot.pause(0.2)  # folded, not drawn
        assert drawn() == before
        app.tick()
        half = app._ticks % 2
        after = drawn()
        assert [a is not b for a, b in zip(before, after, strict=True)] == [k % 2 == half for k in range(4)]
        assert all(p.query_one(".numbers").render() for p in panels)
        app.tick()  # the other half
        assert all(a is not b for a, b in zip(before, drawn(), strict=True))
        await pilot.press("y")  # a key's redraw: every chart at once
        assert all(p.query_one(".loss", Chart).data.log for p in panels)
        app.fps = 2  # below STAGGER_FPS a chart would follow at < 2 Hz: every chart, every tick
        before = drawn()
        feed.deliver([e for name in names for e in steps(name, 300, 100, T0)])
        await pilot.pause(0.2)
        app.tick()
        assert all(a is not b for a, b in zip(before, drawn(), strict=True))


async def test_a_new_subtitle_repaints_the_panels_bottom_border_only(tmp_path: Path):
    feed = Feed(tmp_path)
    app = TuimonApp(feed, fps=0.01)
    async with app.run_test(size=(120, 32)) as pilot:
        feed.deliver([{"type": "run_queued", "t": T0, "run": "e", "mode": "eager", "precision": "fp32"},
                      *steps("e", 0, 50, T0)])
        await settle(app, pilot, 3)
        panel = app.query_one(RunPanel)
        await pilot.pause(0.1)
        assert not panel._repaint_regions  # all painted
        feed.deliver(steps("e", 50, 10, T0))
        await pilot.pause(0.1)
        panel._subtitle_t = 0.0  # its clock is due
        app.redraw()
        assert "60 steps" in panel.border_subtitle
        w, h = panel.outer_size
        assert panel._repaint_regions == {Region(0, h - 1, w, 1)}
        bottom = panel.render_lines(Region(0, h - 1, w, 1))  # what the compositor paints there
        assert "60 steps" in bottom[0].text and "╯" in bottom[0].text


# ---- the comparison strip ------------------------------------------------------------------
class StripApp(App):
    def compose(self) -> ComposeResult:
        yield ComparisonStrip()


async def test_the_comparison_strip_grows_but_does_not_shrink_while_the_same_runs_show():
    app = StripApp()
    async with app.run_test(size=(80, 20)) as pilot:
        strip = app.query_one(ComparisonStrip)
        shown = iter(["verdict\na vs b\nc vs d", "verdict\na vs b", "a vs b"])
        strip._text = lambda summary, note: Text(next(shown))
        ab = SimpleNamespace(runs=[SimpleNamespace(label="a"), SimpleNamespace(label="b")])
        for _ in range(2):
            strip.show(ab, None)
            await pilot.pause()
            assert strip.size.height == 3
        strip.show(SimpleNamespace(runs=[SimpleNamespace(label="a")]), None)  # other runs
        await pilot.pause()
        assert strip.size.height == 1
