"""--until-known end to end (issue 42): a recipe run in rounds of one process a variant, each
round ended by tuimon at a step boundary once its processes have what the answer needs, the
session ended by the rule or its --budget of stepping, and the summary saying why."""

from __future__ import annotations

import json

from test_end_to_end import TINY, runs_of
from test_scripts import PY, script

from tuimon import events


def test_a_recipe_runs_until_its_answer_is_known_or_its_budget_is_spent(tuimon):
    # parallel: a round's two processes step at once, so a round is ~6 s of stepping, not 12
    proc, session = tuimon(TINY, "--headless", "--until-known", "--budget", "40", "--schedule",
                           "parallel", "--modes", "eager,default", "--device", "cpu",
                           one_process=False, timeout=240)
    assert proc.returncode == 0, proc.stderr
    assert "until the answer is known" in proc.stderr  # the first note says what it will do
    assert "until known: round 1" in proc.stdout
    evs, runs = runs_of(session)
    end = [e for e in evs if e["type"] == events.KNOWN and e["action"] == "end"]
    assert len(end) == 1 and end[0]["known"]["stopped"] in ("known", "budget", "max_rounds")
    rounds = sorted({e["replicate"] for e in evs if e["type"] == events.RUN_QUEUED})
    assert rounds == list(range(1, len(rounds) + 1))
    assert len(rounds) >= 3 or end[0]["known"]["stopped"] == "budget"
    for run, kinds in runs.items():  # each process ended by its stop line, at a step boundary
        assert kinds["finished"][-1]["reason"] == "stopped", run
        assert len(kinds["step"]) >= 60 or end[0]["known"]["stopped"] == "budget", run
    summary = json.loads((session / "summary.json").read_text())
    assert summary["known"]["line"].startswith(("Stopped after", "Stopped by hand"))
    assert summary["noise"]["sequential"]["margin"] == 0.03
    assert summary["known"]["line"] in (session / "summary.md").read_text()


def test_a_script_given_no_length_runs_until_known_past_its_first_validation_pass(tuimon):
    """pytorch/examples' MNIST loop, 50 batches an epoch and a test pass after each, for ever: by
    default tuimon runs it in rounds, round 1 past the first test pass (whose compile is weighed),
    each process stopped at a step boundary; the script is never run to its end."""
    proc, session = tuimon("run", "--headless", "--budget", "45", "--schedule", "parallel", "--",
                           PY, script("mnist_style.py"), "--epochs", "100000", "--train-size", "3200",
                           one_process=False, timeout=300)
    assert proc.returncode == 0, proc.stderr
    evs, runs = runs_of(session)
    first = runs["default-script"]
    assert any(s.get("gap") and s["i"] >= 50 for s in first["step"])  # it reached the test pass
    assert any(c.get("validation") for c in first["compile"])  # ... and its compile
    assert first["finished"][-1]["reason"] == "stopped"
    end = [e for e in evs if e["type"] == events.KNOWN and e["action"] == "end"]
    assert len(end) == 1
    assert "Stopped after" in (session / "summary.md").read_text()
