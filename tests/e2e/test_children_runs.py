"""The real runs of tests/unit/test_children.py: the CLI in a child process, real scripts and compiles.
The pure tests of the same feature stay in tests/unit/test_children.py."""

from __future__ import annotations

import json

from conftest import SCRIPTS
from test_children import PY
from test_end_to_end import runs_of


def test_a_hogwild_script_is_answered_in_one_line_and_not_run_again(tuimon):
    """mnist_hogwild's reproduction with --duration (3 processes a variant, in rounds): round 1
    of each variant says where its training ran, with the children's 40 optimizer steps; rounds
    2 and 3 are not run; nothing says "within its warm-up" or "still starting"."""
    proc, session = tuimon("run", "--headless", "--duration", "30", "--", PY, str(SCRIPTS / "hogwild.py"),
                           one_process=False, timeout=600)
    assert proc.returncode == 0, proc.stderr
    data = json.loads((session / "summary.json").read_text())
    line = data["verdict"]["line"]
    assert data["verdict"]["kind"] == "none"
    assert line.startswith("Verdict: no answer: eager/script, the reference, measured nothing: the "
                           "script's training ran in 2 child processes (train() in hogwild.py, started "
                           "with multiprocessing spawn), which tuimon does not hook: they made 40 "
                           "optimizer steps (40 backward() calls)"), line
    everything = (session / "events.jsonl").read_text() + proc.stdout
    assert "within its warm-up" not in everything and "still starting" not in everything
    _, runs = runs_of(session)
    started = sorted(r for r, kinds in runs.items() if "run_started" in kinds or "step" in kinds)
    assert started == ["default-script", "eager-script"], started
    for later in ("eager-script-2", "eager-script-3", "default-script-2", "default-script-3"):
        assert any(w["text"].startswith("not run: ") for w in runs[later]["warning"]), later
    md = (session / "summary.md").read_text()
    assert "nothing can be measured here" in md
