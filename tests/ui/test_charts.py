"""The charts: the bounded whole-run series and its columns, the axis that clips outliers, the
braille drawing, and the keys that change what the charts show (o, z, escape, y)."""

from __future__ import annotations

import random
from pathlib import Path

from synthetic_session import session

from tuimon import events
from tuimon.analysis.stats.series import StepSeries, axis_range, columns
from tuimon.ui.app import TuimonApp
from tuimon.ui.history import RunHistory
from tuimon.ui.model import SessionModel
from tuimon.ui.sources import ReplaySource
from tuimon.ui.widgets.chart import Chart
from tuimon.ui.widgets.chart_draw import Plot, PlotLine, draw
from tuimon.ui.widgets.compile_bar import CompileBar
from tuimon.ui.widgets.overlay import OverlayView
from tuimon.ui.widgets.run_panel import RunPanel
from tuimon.ui.widgets.zoom import ZoomView


def series(values, kinds=None, t0=100.0, dt=0.001, cap=512) -> StepSeries:
    s = StepSeries(cap=cap)
    t = t0
    for i, v in enumerate(values):
        t += dt
        s.add(i, t, dt * 1000, v, kinds[i] if kinds else "steady")
    return s


# ---- the series ----------------------------------------------------------------------------
def test_a_long_series_stays_bounded_and_keeps_every_step_counted():
    rng = random.Random(0)
    s = series([1 + rng.random() for _ in range(50_000)], cap=128)
    assert len(s.buckets()) <= 129
    assert sum(b.n for b in s.buckets()) == 50_000
    b = s.buckets()[10]
    assert b.lo <= b.p10 <= b.p50 <= b.p90 <= b.hi


def test_compile_and_warmup_steps_stay_in_buckets_of_their_own_and_pauses_split_buckets():
    kinds = ["compile"] + ["warmup"] * 9 + ["steady"] * 990
    s = StepSeries(cap=16)
    t = 0.0
    for i in range(1000):
        if i == 500:
            s.pause()
            t += 5.0
        t += 0.001
        s.add(i, t, 1.0, 1.0, kinds[i])
    first = s.buckets()[0]
    assert first.kind == "compile" and first.n == 1
    assert all(b.t0 >= 5.0 or b.t1 < 1.0 for b in s.buckets())  # none spans the pause


def test_incremental_columns_equal_binning_everything_again():
    rng = random.Random(1)
    s = StepSeries(cap=64)
    t = 100.0
    for i in range(3000):
        t += 0.001 * (1 + rng.random())
        s.add(i, t, 1.0, rng.random(), "compile" if i == 0 else "steady")
        if i % 97 == 0:
            for by, x0, x1 in (("t", 100.0, 110.0), ("i", 0, 4000)):
                assert s.columns(x0, x1, 80, by) == columns(s.buckets(), x0, x1, 80, by)


def test_one_slow_step_does_not_scale_the_axis():
    values = [0.5 + 0.01 * (i % 5) for i in range(200)]
    values[100] = 5.0
    s = series(values)
    cols = s.columns(100.0, 100.2, 60)
    low, top = axis_range(cols)
    assert top < 0.6 and low > 0.45
    plot = Plot("step ms", [PlotLine("eager", "#4aa3ff", s)], 100.0, 100.2)
    rows = [strip.text for strip in draw(plot, 60, 10)]
    assert "▲" in rows[1] and "1 clipped, max 5.00" in rows[0]


def test_few_points_are_drawn_as_points_and_many_as_a_line():
    few = draw(Plot("step ms", [PlotLine("a", "#4aa3ff", series([1.0, 2.0, 1.5]))], 100.0, 100.004), 40, 8)
    assert sum(strip.text.count("•") for strip in few) == 3
    many = draw(Plot("step ms", [PlotLine("a", "#4aa3ff", series([1.0 + (i % 3) for i in range(400)]))],
                     100.0, 100.4), 40, 8)
    assert not any("•" in strip.text for strip in many)
    assert any(any(0x2800 < ord(ch) <= 0x28FF for ch in strip.text) for strip in many)  # braille


def test_a_log_axis_has_powers_of_ten():
    s = series([10 ** (-k / 100) for k in range(400)])
    rows = [strip.text for strip in draw(Plot("loss", [PlotLine("a", "#4aa3ff", s)], 100.0, 100.4,
                                              log=True, clip=False, unit="loss"), 40, 10)]
    assert "log" in rows[0]
    assert any(r.strip().startswith("1.00┤") for r in rows) and any("0.1┤" in r for r in rows)


# ---- history folded from events -----------------------------------------------------------
def test_history_keeps_turns_pauses_and_the_compile_under_way():
    h = RunHistory()
    h.add({"type": "phase", "t": 1.0, "run": "r", "phase": "compiling", "compile_id": "0/0"})
    h.add({"type": "compile_phase", "t": 1.5, "run": "r", "phase": "dynamo trace", "compile_id": "0/0"})
    h.add({"type": "compile_phase", "t": 3.0, "run": "r", "phase": "inductor codegen", "compile_id": "0/0"})
    assert h.compile_bar(now=7.0) == [("starting", 0.5), ("dynamo", 1.5), ("codegen", 4.0)]
    h.add({"type": "step", "t": 8.0, "run": "r", "i": 0, "ms": 7000.0, "compile_ms": 6990.0,
           "phase": "warmup"})
    assert h.compile_t0 is None and h.steps.buckets()[0].kind == "compile"
    h.add({"type": "phase", "t": 9.0, "run": "r", "phase": "paused", "turn": True})
    h.add({"type": "phase", "t": 11.0, "run": "r", "phase": "steady"})
    h.add({"type": "phase", "t": 12.0, "run": "r", "phase": "paused"})
    assert list(h.spans) == [[9.0, 11.0, True], [12.0, None, False]]


def test_gpu_samples_of_several_devices_become_one_value_per_run():
    model = SessionModel()
    model.add(events.make(events.RUN_QUEUED, "a", mode="eager", precision="fp32"))
    devices = [{"index": 0, "util_gpu": 80, "mem_used": 2**30, "temp_c": 60},
               {"index": 1, "util_gpu": 90, "mem_used": 2**31, "temp_c": 70}]
    model.add({"type": "sample", "t": 5.0, "devices": devices,
               "runs": {"a": {"cpu_percent": 100.0, "gpus": [0, 1]}}})
    probes = model.runs["a"].history.probes
    assert probes["util"].buckets()[0].p50 == 85
    assert probes["vram"].buckets()[0].p50 == 3.0
    assert probes["temp"].buckets()[0].p50 == 70


# ---- keys ------------------------------------------------------------------------------------
async def settle(app, pilot, rounds: int = 20) -> None:
    for _ in range(rounds):
        await pilot.pause(0.05)
        app.tick()
        if app.model.ended:
            break
    app.tick()
    await pilot.pause(0.1)


async def test_o_shows_every_run_on_one_chart_and_escape_returns(tmp_path: Path):
    app = TuimonApp(ReplaySource(session(tmp_path, "s", steps=200, gpu=True), follow=False))
    async with app.run_test(size=(120, 32)) as pilot:
        await settle(app, pilot)
        await pilot.press("o")
        await settle(app, pilot, 2)
        overlay = app.query_one(OverlayView)
        assert overlay.display and not app.query_one("#panels").display
        by_step = overlay.query_one(".by-step", Chart)
        assert [ln.label for ln in by_step.data.lines] == ["eager/fp32", "default/fp32"]
        assert app.focused is by_step
        gpu = [c.chart_name for c in overlay.charts() if c.chart_name.startswith(("GPU", "VRAM"))]
        assert gpu == ["GPU util %", "VRAM GiB", "GPU °C"]  # samples carried devices
        assert "step ms by step" in overlay.query_one(".by-step", Chart).render_line(0).text
        await pilot.press("escape")
        await settle(app, pilot, 2)
        assert app.query_one("#panels").display and not overlay.display
        assert isinstance(app.focused, RunPanel)


async def test_z_zooms_the_focused_chart_arrows_go_to_the_next_and_escape_returns(tmp_path: Path):
    app = TuimonApp(ReplaySource(session(tmp_path, "s", steps=200), follow=False))
    async with app.run_test(size=(120, 32)) as pilot:
        await settle(app, pilot)
        await pilot.press("right", "z")  # the second panel's step time
        await settle(app, pilot, 2)
        zoom = app.query_one(ZoomView)
        assert zoom.display and not app.query_one("#panels").display
        assert zoom.border_title == "default/fp32 · step time"
        chart = zoom.query_one(Chart)
        assert chart.data is zoom.source.data and chart.size.height > 25
        await pilot.press("right")
        assert zoom.border_title == "default/fp32 · loss"
        await pilot.press("escape")
        await settle(app, pilot, 2)
        assert not zoom.display and app.query_one("#panels").display
        assert app.focused is list(app.query(RunPanel))[1]
        await pilot.press("o", "tab", "z")  # in the overlay: its focused chart
        await settle(app, pilot, 2)
        assert zoom.border_title == "all runs · step time by wall time"
        await pilot.press("escape")
        assert app.views.current == "overlay"


async def test_y_puts_the_loss_charts_on_a_log_axis_and_back(tmp_path: Path):
    app = TuimonApp(ReplaySource(session(tmp_path, "s", steps=200), follow=False))
    async with app.run_test(size=(120, 32)) as pilot:
        await settle(app, pilot)
        loss = app.query(RunPanel).first().query_one(".loss", Chart)
        assert not loss.data.log
        await pilot.press("y")
        await settle(app, pilot, 2)
        assert loss.data.log and "log" in loss.render_line(0).text
        await pilot.press("o")
        await settle(app, pilot, 2)
        assert app.query_one(OverlayView).query_one(".loss", Chart).data.log
        await pilot.press("y")
        await settle(app, pilot, 2)
        assert not app.query_one(OverlayView).query_one(".loss", Chart).data.log


class Feed:
    """A source that hands the app the events a test gives it."""

    read_only = True

    def __init__(self, path: Path) -> None:
        self.path = path
        self.deliver = None

    def start(self, deliver) -> None:
        self.deliver = deliver

    def close(self, timeout: float = 0) -> None:
        pass

    def log_path(self, run: str) -> Path:
        return self.path / f"{run}.log"


async def test_a_compiling_panel_shows_its_phases_growing_not_an_empty_chart(tmp_path: Path):
    feed = Feed(tmp_path)
    app = TuimonApp(feed)
    async with app.run_test(size=(80, 24)) as pilot:
        t = 1_800_000_000.0
        feed.deliver([{"type": "run_queued", "t": t, "run": "d", "mode": "default", "precision": "fp32"},
                      {"type": "phase", "t": t, "run": "d", "phase": "compiling", "compile_id": "0/0"},
                      {"type": "compile_phase", "t": t + 1, "run": "d", "phase": "dynamo trace",
                       "compile_id": "0/0"},
                      {"type": "compile_phase", "t": t + 4, "run": "d", "phase": "inductor codegen",
                       "compile_id": "0/0"},
                      {"type": "sample", "t": t + 9, "runs": {}, "devices": []}])
        await settle(app, pilot, 3)
        panel = app.query_one(RunPanel)
        bar = panel.query_one(CompileBar)
        assert bar.display and not panel.query_one(".steps", Chart).display
        text = str(bar.render())
        assert "inductor codegen" in text and "dynamo" in text and "codegen" in text
        assert "█" in text


def test_an_empty_x_range_draws_axes_not_an_error():
    s = series([1.0, 2.0])  # steps at t = 100.001, 100.002
    for clip, log in ((True, False), (False, False), (False, True)):
        rows = draw(Plot("x", [PlotLine("a", "#4aa3ff", s)], 200.0, 201.0, clip=clip, log=log), 40, 6)
        assert len(rows) == 6


def test_an_outlier_in_the_cell_where_a_compile_ended_does_not_hide_its_mark():
    values = [5.0] + [1.0 + 0.01 * (i % 5) for i in range(400)]
    values[4] = values[300] = 50.0  # step 4 lands in the compile's cell, beside its column
    s = series(values, kinds=["compile"] + ["steady"] * 400)
    rows = [strip.text for strip in draw(Plot("step ms", [PlotLine("a", "#4aa3ff", s)], 99.995,
                                              100.5), 40, 8)]
    assert "2 clipped, max 50.0" in rows[0]  # both outliers counted
    assert rows[1][7] == "◆" and rows[1].count("▲") == 1  # the compile's mark, the other outlier's
