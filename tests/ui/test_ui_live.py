"""The TUI driving a real session: real runner processes, keys that change runs, clean quit."""

from __future__ import annotations

import time

import psutil
from conftest import RECIPES, TEST_RECIPES, until

from tuimon.control.supervisor import Plan, Supervisor
from tuimon.sessiondir import store as store_mod
from tuimon.sessiondir.store import SessionStore
from tuimon.settings import RunSettings
from tuimon.ui.app import TuimonApp
from tuimon.ui.sources import LiveSource
from tuimon.ui.widgets.run_panel import RunPanel
from tuimon.variants import product


def make_app(tmp_path, recipe, modes, precisions, settings, cache, schedule="parallel"):
    """``settings``: the runs' (tuimon/settings.py), as keywords."""
    store = SessionStore.create(tmp_path / "sessions", "live")
    plan = Plan(RunSettings.make(recipe=str(recipe), **settings), product(modes, precisions),
                schedule, cache_dir=cache, interval=0.5)
    return TuimonApp(LiveSource(Supervisor(store, plan))), store


def stored(store, kind):
    evs, _ = store_mod.read_events(store.path)
    return [e for e in evs if e["type"] == kind]


def descendants() -> list[psutil.Process]:
    return [p for p in psutil.Process().children(recursive=True) if p.status() != psutil.STATUS_ZOMBIE]


async def test_keys_change_the_runs_and_quit_leaves_nothing_behind(tmp_path, inductor_cache):
    app, store = make_app(tmp_path, TEST_RECIPES / "slow_steps.py", ["eager"], ["fp32"],
                          {"steps": 100000, "knobs": (("sleep_ms", "20"),), "warmup": "1"},
                          inductor_cache)
    async with app.run_test(size=(160, 45)) as pilot:
        await until(app, pilot, lambda: app.model.runs.get("eager-fp32")
                    and app.model.runs["eager-fp32"].steps > 10, what="first steps")
        panel = app.query_one(RunPanel)
        assert "median" in str(panel.query_one(".numbers").render())
        first = app.model.runs["eager-fp32"].steps
        await until(app, pilot, lambda: app.model.runs["eager-fp32"].steps > first + 5,
                    what="numbers to update")

        # space pauses: no new steps; space again resumes.
        await pilot.press("space")
        await until(app, pilot, lambda: app.model.runs["eager-fp32"].state == "paused", what="pause")
        paused_at = app.model.runs["eager-fp32"].steps
        await pilot.pause(1.0)
        app.tick()
        assert app.model.runs["eager-fp32"].steps == paused_at
        await pilot.press("space")
        await until(app, pilot, lambda: app.model.runs["eager-fp32"].steps > paused_at + 3,
                    what="resume")

        # a toggles precision: a new run in the same panel, the old one kept in the store.
        await pilot.press("a")
        await until(app, pilot, lambda: app.model.panels == ["eager-amp"], what="amp panel")
        queued = stored(store, "run_queued")
        assert queued[-1]["run"] == "eager-amp" and queued[-1]["replaces"] == "eager-fp32"
        assert any(e["run"] == "eager-fp32" and e["reason"] == "stopped"
                   for e in stored(store, "finished"))

        # n offers the variants not shown yet; enter adds the first (the focused one's precision).
        await pilot.press("n")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await until(app, pilot, lambda: len(app.model.panels) == 2, what="a second panel")
        assert app.model.panels[1] == "default-amp"

        # x closes the focused panel and stops its run.
        app.query(RunPanel).last().focus()
        await pilot.pause()
        await pilot.press("x")
        await until(app, pilot, lambda: app.model.panels == ["eager-amp"], what="panel closed")

        await pilot.press("q")
        await pilot.pause(0.3)
        assert app.screen.__class__.__name__ == "QuitScreen"
        await pilot.press("s")
        deadline = time.monotonic() + 30
        while app.is_running and time.monotonic() < deadline:
            await pilot.pause(0.2)
    assert not descendants()
    assert stored(store, "session_ended")


async def test_m_restarts_the_focused_panel_as_the_next_compile_mode(tmp_path, inductor_cache):
    app, store = make_app(tmp_path, RECIPES / "tiny_mlp.py", ["eager"], ["fp32"],
                          {"steps": 200000}, inductor_cache)
    async with app.run_test(size=(120, 32)) as pilot:
        await until(app, pilot, lambda: app.model.runs.get("eager-fp32")
                    and app.model.runs["eager-fp32"].steps > 50, what="eager steps")
        await pilot.press("m")
        await until(app, pilot, lambda: app.model.panels == ["default-fp32"]
                    and app.model.runs["default-fp32"].steps > 50, timeout=120,
                    what="the compiled variant to run")
        assert app.model.runs["default-fp32"].mode == "default"
        await pilot.press("q")
        await pilot.press("s")
        deadline = time.monotonic() + 30
        while app.is_running and time.monotonic() < deadline:
            await pilot.pause(0.2)
    assert not descendants()
