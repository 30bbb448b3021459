"""The real runs of tests/unit/test_eval_in_step.py: the CLI in a child process, real scripts and compiles.
The pure tests of the same feature stay in tests/unit/test_eval_in_step.py."""

from __future__ import annotations

import csv
import io
import json
import statistics

from conftest import SCRIPTS
from test_end_to_end import runs_of
from test_eval_in_step import PY


def test_a_gcn_style_script_is_measured_with_its_eval_forwards_inside_the_step(tuimon):
    """The real run: no step after the first with eval is a gap, its eval forwards (two a step,
    5 ms each spun) are its eval phase and not its forward (one, 5 ms), the summary and
    steps.csv say so, and tuimon's steps agree with the script's own timer."""
    proc, session = tuimon("run", "--headless", "--modes", "eager", "--steps", "40", "--", PY,
                           str(SCRIPTS / "graph_eval.py"), "--spin-ms", "5", "--val-every", "10",
                           "--nodes", "300")
    assert proc.returncode == 0, proc.stderr
    kinds = runs_of(session)[1]["eager-script"]
    steps = kinds["step"]
    assert len(steps) == 40
    assert [s["i"] for s in steps if s.get("gap")] == [1]  # the first eval only
    assert any("model.eval() in every step since step 1" in w["text"] for w in kinds["warning"])
    steady = [s for s in steps if s["phase"] == "steady" and not s.get("gap")]
    assert all(len(s["ph"]) == 5 for s in steady[1:])
    fwd = statistics.median(s["ph"][1] for s in steady) / 1000
    ev = statistics.median(s["ph"][4] for s in steady) / 1000
    assert fwd >= 5.0 and ev >= 10.0, (fwd, ev)
    assert fwd < 0.8 * ev, (fwd, ev)  # the eval forwards are not in forward
    summary = json.loads((session / "summary.json").read_text())
    (row,) = summary["runs"]
    assert row["timing"]["measured"] >= 25 and "eval" in row["phases"]["step_phases"]
    assert "| step: eval" in (session / "summary.md").read_text()
    rows = list(csv.DictReader(io.StringIO((session / "steps.csv").read_text())))
    assert all(r["eval_phase_ms"] for r in rows[2:])
    # The script ran as without tuimon: its own timer printed at epochs 10, 20 and 30 (the stop
    # came inside epoch 40's optimizer.step(), before its evals).
    log = (session / "logs" / "eager-script.log").read_text()
    assert [x[:11] for x in log.splitlines() if x.startswith("Epoch:")] == [
        "Epoch: 0010", "Epoch: 0020", "Epoch: 0030"]


def test_a_compiled_gcn_style_run_measures_its_steps_and_its_capture_compiles_nothing(tuimon):
    """Compiled: the eval forwards' first compile (eval mode, no grad) is a validation compile in
    the one gap step, training's own compile is no recompile of training's, and the automatic
    capture's spans cost no compile (a global module hook did: outer_spans.py)."""
    proc, session = tuimon("run", "--headless", "--modes", "default", "--steps", "40", "--", PY,
                           str(SCRIPTS / "graph_eval.py"), "--nodes", "300")
    assert proc.returncode == 0, proc.stderr
    kinds = runs_of(session)[1]["default-script"]
    assert [s["i"] for s in kinds["step"] if s.get("gap")] == [1]
    assert {c.get("frame") for c in kinds["compile"]} <= {"forward", None}
    assert any(c.get("validation") for c in kinds["compile"])
    (done,) = [p for p in kinds["profile"] if p.get("state") == "done"]
    assert done["compiles"] == 0 and done["outside"]["modules_named"] is False
