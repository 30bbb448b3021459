"""The profiler pane driven by keys against a real run: p captures, the pane shows real ops."""

from __future__ import annotations

import io

from conftest import RECIPES, until
from rich.console import Console

from tuimon.control.supervisor import Plan, Supervisor
from tuimon.sessiondir.store import SessionStore
from tuimon.settings import RunSettings
from tuimon.ui.app import TuimonApp
from tuimon.ui.sources import LiveSource
from tuimon.ui.widgets.profiler_pane import ProfilerPane, render
from tuimon.variants import product


async def test_p_captures_and_the_pane_shows_top_ops_and_a_comparison(tmp_path, inductor_cache):
    store = SessionStore.create(tmp_path, "prof")
    settings = RunSettings.make(recipe=str(RECIPES / "tiny_mlp.py"), steps=200000, auto_profile=False)
    plan = Plan(settings, product(["eager"], ["fp32", "amp"]), "parallel", cache_dir=inductor_cache,
                interval=None)
    app = TuimonApp(LiveSource(Supervisor(store, plan)))

    async with app.run_test(size=(140, 50)) as pilot:
        runs = app.model.runs
        await until(app, pilot, lambda: len(runs) == 2 and all(r.steps > 50 for r in runs.values()),
                    what="both runs stepping")
        await pilot.press("b")  # backward attribution for the next capture
        assert app.backward_next
        await pilot.press("p")
        await until(app, pilot, lambda: runs["eager-fp32"].profiles, what="the first capture")
        assert app.query_one(ProfilerPane).has_class("visible")
        await pilot.press("right", "p")  # the other panel: a second capture to compare with
        await until(app, pilot, lambda: runs["eager-amp"].profiles, what="the second capture")
        console = Console(width=140, file=io.StringIO(), record=True)
        console.print(render(runs["eager-amp"], app._compare_with(runs["eager-amp"]), False))
        text = console.export_text()
        assert "profiler: eager/amp" in text and "aten::" in text
        assert "self · eager/fp32" in text  # the same ops of the other run, side by side
        assert "trace:" in text and "-profile1.json" in text
        fp32 = runs["eager-fp32"].profiles[-1]
        assert fp32["state"] == "done" and fp32["modules"]  # backward attribution was on
        await pilot.press("P")
        await pilot.pause()
        assert not app.query_one(ProfilerPane).has_class("visible")
        app.source.close()


def test_the_pane_says_the_automatic_capture_recorded_nothing_without_calling_it_a_failure():
    from tuimon.ui.model import RunLive

    live = RunLive("r", "eager", "fp32")
    error = "the window ended before any active step was recorded (1 of 3 window steps ran)"
    live.profiles = [{"state": "failed", "capture": 1, "source": "auto", "quiet": True, "error": error}]
    console = Console(width=200, file=io.StringIO(), record=True)
    console.print(render(live, None, False))
    text = console.export_text()
    assert f"the automatic capture recorded nothing: {error}" in text and "failed" not in text
