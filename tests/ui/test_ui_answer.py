"""The TUI's side of the answer: the verdict in the strip, ``n`` offering the --set axis values,
and keys that keep a panel's axis values (a source that records what the keys ask)."""

from __future__ import annotations

from test_verdict import session, variant

from tuimon.ui.add_screen import AddScreen
from tuimon.ui.app import TuimonApp
from tuimon.ui.widgets.comparison import ComparisonStrip
from tuimon.ui.widgets.run_panel import RunPanel
from tuimon.variants import Variant

W = {"w": ["32", "64"]}


class Recorder:
    """A live source over a fixed list of events; add and restart are recorded."""

    read_only = False

    def __init__(self, path, evs):
        self.path, self.evs, self.asked = path, evs, []

    def start(self, deliver):
        deliver(self.evs)

    def add(self, variant, replaces=None):
        self.asked.append(("add", variant))
        return variant.run_id + "-2"

    def restart(self, run, variant=None):
        self.asked.append(("restart", run, variant))
        return run + "-2"

    def log_path(self, run):
        return self.path / f"{run}.log"

    def close(self, timeout=0):
        pass


async def settle(app, pilot, ticks=3):
    for _ in range(ticks):
        await pilot.pause(0.2)
        app.tick()
    await pilot.pause()


async def test_the_strip_leads_with_the_verdict_and_n_offers_the_axis_values(tmp_path):
    evs = session(variant("eager", "fp32", 10.0, seed=1, axes={"w": "32"}, processes=1),
                  variant("default", "fp32", 7.0, seed=2, compile_s=2, axes={"w": "32"}, processes=1), axes=W)
    source = Recorder(tmp_path, evs)
    app = TuimonApp(source)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(app, pilot)
        panels = list(app.query(RunPanel))
        assert [p.run for p in panels] == ["eager-fp32-w_32", "default-fp32-w_32"]
        assert panels[1].border_title.startswith("default/fp32 · w=32")
        strip = str(app.query_one(ComparisonStrip).render())
        assert strip.startswith("Verdict: use default/fp32 · w=32 — 1.4")
        await pilot.press("right", "n")
        await settle(app, pilot, 1)
        screen = app.screen
        assert isinstance(screen, AddScreen)
        labels = [v.label for v in screen.offered]
        assert labels[0] == "reduce-overhead/fp32 · w=32"  # the focused panel's neighbours first
        assert "eager/fp32 · w=64" in labels and "default/amp · w=64" in labels
        assert "default/fp32 · w=32" not in labels  # shown already
        await pilot.press("down", "enter")
        await settle(app, pilot, 1)
        assert source.asked == [("add", Variant("max-autotune", "fp32", (("w", "32"),)))]
        await pilot.press("m", "a")
        await settle(app, pilot, 1)
        assert source.asked[1:] == [
            ("restart", "default-fp32-w_32", Variant("reduce-overhead", "fp32", (("w", "32"),))),
            ("restart", "default-fp32-w_32", Variant("default", "amp", (("w", "32"),)))]
        await pilot.press("n", "escape")
        await settle(app, pilot, 1)
        assert not isinstance(app.screen, AddScreen) and len(source.asked) == 3
