"""Why compile did not help, on real sessions of tests/recipes' cases: the graph break (with its
line), the recompile (the guard that failed), the scalar read (named by module); from the
automatic captures; in summary.md, the headless output and the TUI's why pane (key w)."""

from __future__ import annotations

import io
import json
import re
import shutil
from pathlib import Path

from conftest import RECIPES, TEST_RECIPES
from rich.console import Console

from tuimon.sessiondir import store
from tuimon.ui.app import TuimonApp
from tuimon.ui.sources import ReplaySource
from tuimon.ui.widgets.why_pane import WhyPane
from tuimon.ui.widgets.why_pane import render as render_pane

TINY = RECIPES / "tiny_mlp.py"
BREAK_LINE = next(i for i, line in enumerate(TINY.read_text().splitlines(), 1)
                  if line.strip() == "torch._dynamo.graph_break()")


def why_section(session: Path) -> str:
    md = (session / "summary.md").read_text()
    assert "## Why compile did not help" in md, md
    return md.split("## Why compile did not help")[1]


def findings(session: Path) -> dict[str, dict]:
    (v,) = [w for w in json.loads((session / "summary.json").read_text())["why"] if w["compiled"]]
    return {f["rule"]: f for f in v["findings"]}


async def test_a_graph_break_is_named_with_its_line_in_every_view(tuimon, tmp_path):
    proc, session = tuimon(str(TINY), "--headless", "--modes", "eager,default", "--steps", "30",
                           "--set", "graph_break=1")
    assert proc.returncode == 0, proc.stderr
    # Each run got its automatic capture as its second turn began: no trace file.
    evs, _ = store.read_events(session)
    auto = [e for e in evs if e["type"] == "profile" and e.get("state") == "done"]
    assert {e["run"] for e in auto} == {"eager-fp32", "default-fp32"}
    turns = {run: [e["t"] for e in evs if e.get("run") == run and e["type"] == "phase" and e.get("turn")]
             for run in ("eager-fp32", "default-fp32")}
    for e in auto:
        assert e["source"] == "auto" and e["trace"] is None and e["first_step"] >= 1
        assert e["t"] > turns[e["run"]][1]  # after the second turn's wait, not in the first turn
    graphs = next(e for e in auto if e["run"] == "default-fp32")["compiled_graphs"]
    assert graphs["calls"] == 4
    # each graph's calls a step (the price's account): 4 graphs, once each
    assert len(graphs["by_graph"]) == 4 and sum(g["calls"] for g in graphs["by_graph"]) == 4
    f = findings(session)["graph_breaks"]
    assert "each step runs 4 compiled graphs" in f["title"]
    assert f"break at tiny_mlp.py:{BREAK_LINE} (×1): User-inserted graph break" in " ".join(f["evidence"])
    if f["price"] is not None:  # priced when the capture's times hold (not disturbed by load)
        # "costs 1.14 ms a step (30 %)"; the share only where the step's time is known
        assert re.fullmatch(r"costs [0-9.]+ (ms|µs|s) a step( \([^)]+ %\))?", f["price"]), f["price"]
        assert any(line.startswith(f"the break at tiny_mlp.py:{BREAK_LINE} costs ") for line in f["evidence"])
    why = why_section(session)
    assert f"tiny_mlp.py:{BREAK_LINE}: Remove the `torch._dynamo.graph_break()` call." in why
    assert "top ops:" in why  # the eager and compiled captures side by side
    assert "why default/fp32:" in proc.stdout and "graph breaks at 1 place" in proc.stdout

    # The why pane (key w) on the recorded session shows the same findings.
    app = TuimonApp(ReplaySource(Path(shutil.copytree(session, tmp_path / "replay")), follow=False))
    async with app.run_test(size=(140, 50)) as pilot:
        for _ in range(10):
            await pilot.pause(0.1)
            app.tick()
        pane = app.query_one(WhyPane)
        assert not pane.has_class("visible")
        await pilot.press("w")
        await pilot.pause(0.2)
        assert pane.has_class("visible")
        console = Console(width=140, file=io.StringIO(), record=True)
        from tuimon.report import why_text

        whys = list(why_text.section(app.model.summary()).lines)  # the pane draws the Why section
        # The eager panel is focused: what bounds its step, and where the compiled one's are.
        console.print(render_pane(app.focused_run(), whys))
        text = console.export_text()
        assert "why eager/fp32 (not compiled): what bounds its step" in text
        assert "other variants (default/fp32): focus their panel" in text
        console = Console(width=140, file=io.StringIO(), record=True)
        console.print(render_pane(app.model.runs["default-fp32"], whys))
        text = console.export_text()
        assert "why default/fp32:" in text and f"break at tiny_mlp.py:{BREAK_LINE}" in text
        assert "try: " in text
        await pilot.press("w")
        await pilot.pause()
        assert not pane.has_class("visible")


def test_a_recompile_names_the_guard_that_failed(tuimon):
    proc, session = tuimon(str(TEST_RECIPES / "shape_change.py"), "--headless", "--modes", "default",
                           "--steps", "30", "--warmup", "1")
    assert proc.returncode == 0, proc.stderr
    f = findings(session)["recompiles"]
    assert f["title"] == "1 recompile: input shapes changed"
    assert any("size mismatch at index 0. expected 8, actual 12" in e for e in f["evidence"])
    assert any("mark_dynamic" in a for a in f["advice"])
    assert "1 recompile: input shapes changed" in why_section(session)


def test_a_scalar_read_is_named_by_its_module(tuimon):
    proc, session = tuimon(str(TEST_RECIPES / "item_in_forward.py"), "--headless", "--modes",
                           "eager,default", "--steps", "30")
    assert proc.returncode == 0, proc.stderr
    found = findings(session)
    f = found["syncs"]
    assert f["title"].startswith("scalar reads in the model: aten::item at forward › probe")
    assert "under torch.compile it also breaks the graph: item_in_forward.py:21" in f["evidence"]
    assert any("capture_scalar_outputs" in a for a in f["advice"])
    assert "item_in_forward.py:21" in " ".join(found["graph_breaks"]["evidence"])
    assert "scalar reads in the model" in why_section(session)
