"""Compile introspection with a real torch.compile on CPU: phases, graph breaks, recompiles, cache."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

from conftest import RECIPES, TEST_RECIPES
from rich.console import Console

from tuimon.sessiondir import store
from tuimon.ui.app import TuimonApp
from tuimon.ui.sources import ReplaySource
from tuimon.ui.widgets.compile_pane import CompilePane, render

TINY = RECIPES / "tiny_mlp.py"
BREAK_LINE = next(i for i, line in enumerate(TINY.read_text().splitlines(), 1)
                  if line.strip() == "torch._dynamo.graph_break()")


def of_type(session: Path, kind: str, run: str = "default-fp32") -> list[dict]:
    evs, _ = store.read_events(session)
    return [e for e in evs if e["type"] == kind and e.get("run") == run]


async def test_graph_break_is_reported_with_reason_and_line_live_and_in_the_pane(tuimon, tmp_path):
    proc, session = tuimon(str(TINY), "--modes", "default", "--steps", "12", "--set", "graph_break=1",
                           "--torch-trace")
    assert proc.returncode == 0, proc.stderr
    breaks = of_type(session, "graph_break")
    assert breaks and breaks[0]["file"].endswith("tiny_mlp.py") and breaks[0]["line"] == BREAK_LINE
    assert "graph_break" in breaks[0]["reason"] or "graph break" in breaks[0]["reason"].lower()
    compiles = of_type(session, "compile")
    assert len([c for c in compiles if c["forward"]]) == 2  # two graphs around the break
    assert all(set(c["phases"]) == {"dynamo", "aot", "inductor", "codegen"} for c in compiles if c["forward"])
    phases = [e["phase"] for e in of_type(session, "compile_phase")]
    assert phases[0] == "dynamo" and any(p.startswith("inductor") for p in phases)
    assert f"graph break at {TINY}:{BREAK_LINE}" in proc.stdout
    summary = json.loads((session / "summary.json").read_text())["runs"][0]
    assert summary["compile"]["graph_breaks"][0]["where"] == f"tiny_mlp.py:{BREAK_LINE}"
    assert summary["compile"]["graphs_fwd"] == 2 and summary["compile"]["graphs_bwd"] == 2
    md = (session / "summary.md").read_text()
    assert "| graphs / breaks / recompiles | 2 fwd + 2 bwd graphs · 1 graph break · 0 recompiles |" in md
    assert f"tiny_mlp.py:{BREAK_LINE}" in md
    # The structured trace for tlparse was written too.
    trace = list((session / "torch-trace" / "default-fp32").glob("*"))
    assert trace and trace[0].stat().st_size > 0

    # Compile pane (key c) on the recorded session.
    app = TuimonApp(ReplaySource(Path(shutil.copytree(session, tmp_path / "replay")), follow=False))
    async with app.run_test(size=(140, 45)) as pilot:
        for _ in range(10):
            await pilot.pause(0.1)
            app.tick()
        await pilot.press("c")
        await pilot.pause(0.2)
        pane = app.query_one(CompilePane)
        assert pane.has_class("visible")
        console = Console(width=140, file=io.StringIO(), record=True)
        console.print(render(app.focused_run(), app.model.stats("default-fp32")))
        text = console.export_text()
        assert "compiles of default/fp32" in text
        assert f"tiny_mlp.py:{BREAK_LINE} ×" in text and "forward()" in text
        await pilot.press("c")
        await pilot.pause()
        assert not pane.has_class("visible")


def test_a_shape_change_is_a_recompile_with_its_reason(tuimon):
    proc, session = tuimon(str(TEST_RECIPES / "shape_change.py"), "--modes", "default",
                           "--steps", "8", "--warmup", "1")
    assert proc.returncode == 0, proc.stderr
    recompiles = of_type(session, "recompile")
    assert recompiles and "size mismatch" in recompiles[0]["reasons"][0]
    assert "expected 8, actual 12" in recompiles[0]["reasons"][0]
    steps = of_type(session, "step")
    assert steps[3].get("compile_ms")  # the step with the new shape compiled, and is kept apart
    summary = json.loads((session / "summary.json").read_text())["runs"][0]
    assert summary["compile"]["recompiles"] >= 1 and summary["timing"]["measured"] == 8 - 1 - 1
    assert "recompile" in proc.stdout


def test_warm_cache_hits_and_phase_times_fit_in_the_first_step(tuimon, tmp_path):
    cache = tmp_path / "own-cache"
    args = (str(TINY), "--modes", "default", "--steps", "6", "--set", "width=48",
            "--cache-dir", str(cache))
    cold_proc, cold = tuimon(*args, cache=False)
    assert cold_proc.returncode == 0, cold_proc.stderr
    warm_proc, warm = tuimon(*args, cache=False)
    assert warm_proc.returncode == 0, warm_proc.stderr
    cold_c, warm_c = of_type(cold, "compile"), of_type(warm, "compile")
    assert {c["cache"] for c in cold_c} == {"cold"}
    assert {c["cache"] for c in warm_c} == {"warm"}
    assert sum(c["seconds"] for c in warm_c) < sum(c["seconds"] for c in cold_c)
    for session, compiles in ((cold, cold_c), (warm, warm_c)):
        first = of_type(session, "step")[0]
        assert sum(c["seconds"] for c in compiles) <= first["ms"] / 1000.0 * 1.01
    md = (warm / "summary.md").read_text()
    assert "| Inductor cache | FX graph 2/2 hits" in md
