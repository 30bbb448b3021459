"""The TUI on a recorded session (tests/data/session_tiny_mlp: tiny_mlp eager vs default)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tuimon.ui.app import TuimonApp
from tuimon.ui.sources import ReplaySource
from tuimon.ui.widgets.comparison import ComparisonStrip
from tuimon.ui.widgets.run_panel import RunPanel

RECORDED = Path(__file__).parents[1] / "data" / "session_tiny_mlp"


@pytest.fixture
def session(tmp_path) -> Path:
    return Path(shutil.copytree(RECORDED, tmp_path / "session"))


async def settle(app, pilot, ticks: int = 3) -> None:
    for _ in range(ticks):
        await pilot.pause(0.3)
        app.tick()
    await pilot.pause()


def text_of(widget) -> str:
    return str(widget.render())


async def test_replay_shows_both_runs_and_their_numbers(session):
    app = TuimonApp(ReplaySource(session, follow=False))
    async with app.run_test(size=(120, 32)) as pilot:
        await settle(app, pilot)
        panels = list(app.query(RunPanel))
        assert [p.run for p in panels] == ["eager-fp32", "default-fp32"]
        assert panels[0].border_title.startswith("eager/fp32")
        assert "done · 400 steps" in panels[1].border_subtitle
        numbers = text_of(panels[1].query_one(".numbers"))
        assert "median" in numbers and "/s" in numbers and "× vs eager" in numbers
        assert "compile" in numbers
        buckets = panels[0].query_one(".steps").data.lines[0].series.buckets()  # all steps
        assert sum(b.n for b in buckets) == 400
        assert sum(b.n for b in buckets if b.kind == "steady") == 397
        strip = text_of(app.query_one(ComparisonStrip))
        assert "default/fp32 vs eager/fp32" in strip and "pays off" in strip
        assert app.focused is panels[0]


async def test_replay_is_read_only_but_exports_and_shows_logs(session):
    app = TuimonApp(ReplaySource(session, follow=False))
    async with app.run_test(size=(120, 32)) as pilot:
        await settle(app, pilot)
        for action in ("mode", "precision", "restart", "pause", "add", "close_panel"):
            assert app.check_action(action, ()) is None  # refused: replay is read-only
        assert app.check_action("export", ()) is True
        await pilot.press("m")
        await settle(app, pilot, 1)
        assert [p.run for p in app.query(RunPanel)] == ["eager-fp32", "default-fp32"]

        await pilot.press("e")
        await pilot.pause(0.2)
        assert (session / "summary.md").is_file() and (session / "steps.csv").is_file()

        await pilot.press("right")
        await pilot.press("l")
        await settle(app, pilot, 1)
        log = app.query_one("#log")
        assert log.has_class("visible")
        assert any("default-fp32" in str(line.text) for line in log.lines[:1])

        await pilot.press("question_mark")
        await pilot.pause()
        assert app.screen.__class__.__name__ == "HelpScreen"
        await pilot.press("escape")
        await pilot.pause()
        await pilot.press("q")
        await pilot.pause(0.5)
    assert app.return_value is not None


async def test_replay_follows_a_growing_session(tmp_path):
    session = tmp_path / "growing"
    (session / "logs").mkdir(parents=True)
    lines = (RECORDED / "events.jsonl").read_text().splitlines(keepends=True)
    half = len(lines) // 2
    (session / "events.jsonl").write_text("".join(lines[:half]))
    app = TuimonApp(ReplaySource(session, poll=0.05))
    async with app.run_test(size=(120, 32)) as pilot:
        await settle(app, pilot)
        before = app.model.events_seen
        with open(session / "events.jsonl", "a") as f:
            f.write("".join(lines[half:]))
        await settle(app, pilot)
        assert app.model.events_seen == len(lines) > before
        await pilot.press("q")
