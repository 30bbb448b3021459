"""Snapshots of the main screen from a recorded session (deterministic: no live data).

Update after an intended UI change: pytest tests/test_ui_snapshots.py --snapshot-update
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tuimon.ui.app import TuimonApp
from tuimon.ui.sources import ReplaySource

RECORDED = Path(__file__).parent / "data" / "session_tiny_mlp"


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
