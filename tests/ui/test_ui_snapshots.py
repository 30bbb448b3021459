"""Snapshots of the main screen, the overlay and a zoomed chart, from a recorded session and
from synthetic ones (few points; outliers, turns and GPUs): deterministic, no live data.

Update after an intended UI change: pytest tests/ui/test_ui_snapshots.py --snapshot-update
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from synthetic_session import session

from tuimon.ui.app import TuimonApp
from tuimon.ui.sources import ReplaySource

RECORDED = Path(__file__).parents[1] / "data" / "session_tiny_mlp"


async def loaded(pilot) -> None:
    app = pilot.app
    for _ in range(50):
        await pilot.pause(0.1)
        app.tick()
        if app.model.ended:
            break
    app.tick()
    await pilot.pause(0.3)


@pytest.mark.parametrize("size", [(80, 24), (160, 45)])
def test_main_screen(snap_compare, tmp_path, size):
    # A fixed directory name: the session name is part of the screen.
    session = Path(shutil.copytree(RECORDED, tmp_path / RECORDED.name))
    app = TuimonApp(ReplaySource(session, follow=False))
    assert snap_compare(app, terminal_size=size, run_before=loaded)


def replay(path: Path, keys: tuple[str, ...] = ()):
    async def run_before(pilot) -> None:
        await loaded(pilot)
        for key in keys:
            await pilot.press(key)
            await loaded(pilot)
    return TuimonApp(ReplaySource(path, follow=False)), run_before


def test_few_points_are_points(snap_compare, tmp_path):
    app, run_before = replay(session(tmp_path, "session_few", steps=6))
    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)


def test_outliers_clipped_turns_and_gpus(snap_compare, tmp_path):
    path = session(tmp_path, "session_outliers", steps=400, outliers=(50, 120, 260), gpu=True, turn=100)
    app, run_before = replay(path)
    assert snap_compare(app, terminal_size=(120, 32), run_before=run_before)


@pytest.mark.parametrize("size", [(80, 24), (120, 32)])
def test_two_variants_overlaid(snap_compare, tmp_path, size):
    app, run_before = replay(Path(shutil.copytree(RECORDED, tmp_path / RECORDED.name)), ("o",))
    assert snap_compare(app, terminal_size=size, run_before=run_before)


def test_zoomed_chart_at_80x24(snap_compare, tmp_path):
    app, run_before = replay(Path(shutil.copytree(RECORDED, tmp_path / RECORDED.name)), ("right", "z"))
    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)
