"""The TUI's side of tuimon try: w, then ↑ ↓ and t on a finding adds the focused variant with
that finding's fix as a new panel; a finding without a fix this machine can try is a notice;
and a fixed run's outcome heads the why pane. Synthetic sessions and a recording source: no
compile runs."""

from __future__ import annotations

import io

from rich.console import Console
from test_ui_answer import Recorder, settle
from test_verdict import session, variant

from tuimon import events
from tuimon.analysis import summarize
from tuimon.report import export
from tuimon.ui.app import TuimonApp
from tuimon.ui.widgets.comparison import ComparisonStrip
from tuimon.ui.widgets.run_panel import RunPanel
from tuimon.ui.widgets.why_pane import WhyPane
from tuimon.variants import Variant

SIZE = (140, 50)
SHAPES = "0/0: tensor 'x' size mismatch at index 0. expected 8, actual 12"


def recompiling(*more) -> list[dict]:
    """eager/fp32, and default/fp32 that recompiled for a shape (finding 1: recompiles, which
    suggests dynamic) and uses 3× eager's memory (finding 2: suggests no fix)."""
    evs = session(variant("eager", "fp32", 10.0, seed=1, processes=1, peak_rss=1e9),
                  variant("default", "fp32", 8.0, seed=2, compile_s=5, processes=1, peak_rss=3e9), *more)
    evs.append(events.make(events.RECOMPILE, "default-fp32", compile_id="0/1", reasons=[SHAPES]))
    return evs


def pane_text(app) -> str:
    console = Console(width=SIZE[0], file=io.StringIO(), record=True)
    console.print(app.query_one(WhyPane).shown)
    return console.export_text()


def toasts(app) -> list[str]:
    return [str(n.message) for n in app._notifications]


async def opened(app, pilot, *keys: str) -> WhyPane:
    await settle(app, pilot)
    await pilot.press(*keys)
    await settle(app, pilot, 1)
    return app.query_one(WhyPane)


async def test_w_then_t_adds_the_focused_variant_with_the_findings_fix(tmp_path):
    source = Recorder(tmp_path, recompiling())
    app = TuimonApp(source)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("right", "t")  # the pane shut: t says how to open it, adds nothing
        await settle(app, pilot, 1)
        assert source.asked == [] and any("open the why pane with w" in t for t in toasts(app))
        pane = await opened(app, pilot, "w")
        assert app.focused_run().run == "default-fp32" and pane.cursor == 0
        text = pane_text(app)
        assert "▶ 1. 1 recompile: input shapes changed" in text
        assert "t → dynamic: dynamic shapes (torch.compile(dynamic=True))" in text
        assert "↑ ↓ select a finding · t tries its fix now" in text
        await pilot.press("t")
        await settle(app, pilot, 1)
        assert source.asked == [("add", Variant("default", "fp32", (("fix", "dynamic"),)))]
        assert any("trying dynamic on default/fp32: added default/fp32 · fix=dynamic" in t
                   for t in toasts(app))
        await pilot.press("down")  # the next finding: more memory than eager, no fix for it
        await settle(app, pilot, 1)
        assert pane.cursor == 1 and "▶ 2. " in pane_text(app)
        await pilot.press("t")
        await settle(app, pilot, 1)
        assert len(source.asked) == 1
        assert any("calls for no fix tuimon can try" in t for t in toasts(app))
        await pilot.press("up", "up")  # stops at the first
        await settle(app, pilot, 1)
        assert pane.cursor == 0


async def test_a_cuda_only_fix_on_a_cpu_run_is_a_notice_and_adds_nothing(tmp_path):
    evs = session(variant("eager", "fp32", 10.0, seed=1, processes=1),
                  variant("reduce-overhead", "fp32", 8.0, seed=2, compile_s=5, processes=1))
    evs.append(events.make(events.CUDAGRAPHS, "reduce-overhead-fp32", kind="skipped",
                           text="skipping cudagraphs due to mutated inputs"))
    source = Recorder(tmp_path, evs)
    app = TuimonApp(source)
    async with app.run_test(size=SIZE) as pilot:
        pane = await opened(app, pilot, "right", "w")
        assert pane.selected(app.focused_run()).figures["code"] == "cudagraphs.skipped"
        assert "no fix to try here: no-cudagraphs (CUDA only)" in pane_text(app)
        await pilot.press("t")
        await settle(app, pilot, 1)
        assert source.asked == []
        assert any("no fix of this finding can be tried on reduce-overhead/fp32: no-cudagraphs "
                   "(CUDA only)" in t for t in toasts(app))


async def test_t_on_a_fix_already_shown_focuses_its_panel(tmp_path):
    shown = variant("default", "fp32", 6.0, seed=3, compile_s=5, processes=1, axes={"fix": "dynamic"})
    source = Recorder(tmp_path, recompiling(shown))
    app = TuimonApp(source)
    async with app.run_test(size=SIZE) as pilot:
        await opened(app, pilot, "right", "w", "t")
        assert source.asked == []
        assert any("default/fp32 · fix=dynamic is shown already" in t for t in toasts(app))
        assert isinstance(app.focused, RunPanel) and app.focused.run == "default-fp32-fix_dynamic"


async def test_a_fixed_runs_outcome_heads_the_why_pane(tmp_path):
    """A session holding default/fp32 and default/fp32 · fix=dynamic (as t adds it): what the fix
    did against the variant without it, analysis/tried.py's, in report/try_text.py's words."""
    evs = session(variant("eager", "fp32", 10.0, seed=1),
                  variant("default", "fp32", 8.0, seed=2, compile_s=20),
                  variant("default", "fp32", 6.0, seed=3, compile_s=20, axes={"fix": "dynamic"}))
    app = TuimonApp(Recorder(tmp_path, evs))
    async with app.run_test(size=SIZE) as pilot:
        await opened(app, pilot, "w")
        line = next(x for x in pane_text(app).splitlines() if x.startswith("tried: "))
        assert line.startswith("tried: dynamic: compile ")
        assert "step 1.33× faster (95 % CI " in line and line.endswith("— faster")


async def test_the_selected_finding_is_scrolled_into_view(tmp_path):
    app = TuimonApp(Recorder(tmp_path, recompiling()))
    async with app.run_test(size=(120, 40)) as pilot:
        pane = await opened(app, pilot, "right", "w")
        assert pane.max_scroll_y > 0 and pane.scroll_y == 0  # three findings, more than it shows
        await pilot.press("down", "down")
        await settle(app, pilot, 1)
        assert pane.cursor == 2 and pane.scroll_y > 0
        await pilot.press("up", "up")
        await settle(app, pilot, 1)
        assert pane.cursor == 0 and pane.scroll_y == 0  # the first: the headline above it too


async def test_the_strip_says_what_each_fix_did_under_the_verdict_in_summary_mds_words(tmp_path):
    """A tried session (its fix axis): the strip's line per fix is summary.md's Tried line."""
    evs = session(variant("eager", "fp32", 10.0, seed=1, axes={"fix": "none"}),
                  variant("default", "fp32", 8.0, seed=2, compile_s=20, axes={"fix": "none"}),
                  variant("default", "fp32", 8.0, seed=3, compile_s=5, axes={"fix": "regional"}),
                  variant("default", "fp32", 6.0, seed=4, compile_s=20, axes={"fix": "dynamic"}),
                  axes={"fix": ["none", "regional", "dynamic"]})
    for e in evs:
        if e["type"] == events.RUN_QUEUED and e["mode"] != "eager":
            e["start"] = "cold"
    md = export.to_markdown({}, summarize(evs))
    said = [line[2:] for line in md.splitlines() if line.startswith("- regional:")
            or line.startswith("- dynamic:")]
    assert said[0].startswith("regional: cold compile 18.0 s → 4.5 s, step ")
    app = TuimonApp(Recorder(tmp_path, evs))
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        strip = str(app.query_one(ComparisonStrip).render()).splitlines()
        assert strip[0].startswith("Verdict: use default/fp32 · fix=dynamic")
        assert strip[1:3] == [f"tried {line}" for line in said]  # the answer, then the rows
        assert strip[3].startswith("default/fp32 · fix=none vs eager/fp32 · fix=none: ")
