"""The export key writes report.html too (issue 35): in a `tuimon report` child waited on by a
thread, so the key returns at once and a notice says when the page is there."""

from __future__ import annotations

import asyncio
import shutil
import time
from pathlib import Path

from tuimon.ui.app import TuimonApp
from tuimon.ui.sources import ReplaySource

RECORDED = Path(__file__).parents[1] / "data" / "session_tiny_mlp"


def notices(app) -> list[str]:
    return [str(n.message) for n in app._notifications]


async def test_e_writes_report_html_in_the_background_and_says_when(tmp_path):
    session = Path(shutil.copytree(RECORDED, tmp_path / "session"))
    app = TuimonApp(ReplaySource(session, follow=False))
    async with app.run_test(size=(120, 32)) as pilot:
        await pilot.pause(0.5)
        app.action_export()
        # the key came back with the summary written and the report still under way (a child
        # process takes ~2 s at least: an interpreter, the summary again, the figures)
        assert (session / "summary.md").is_file() and app.report.busy
        assert not (session / "report.html").exists()
        await pilot.pause()  # the notices are shown on the loop
        assert any("report.html is being written" in n for n in notices(app))
        app.action_export()  # again while it is written: said, not started twice
        await pilot.pause()
        assert any("report.html is still being written" in n for n in notices(app))
        deadline = time.monotonic() + 120
        while app.report.busy and time.monotonic() < deadline:
            await asyncio.sleep(0.2)
        await pilot.pause(0.2)
        assert (session / "report.html").is_file()
        done = [n for n in notices(app) if n.startswith("wrote ")]
        assert done and f"{session / 'report.html'} (" in done[0] and "opens offline" in done[0]
        await pilot.press("q")
        await pilot.pause(0.3)
