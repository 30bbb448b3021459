"""Issue 33.8: a script tuimon stopped (--steps, --duration, a stop) is not a failed variant when
its own code then fails after the stop — word_language_model loads the checkpoint it writes at an
epoch's end, which a run stopped before that never wrote: its steps stand, the summary says what
the after-code raised and why, and tuimon exits 0. A stop the script does not catch reads as one
line in its log, not a traceback through tuimon's frames."""

from __future__ import annotations

import json

from test_end_to_end import runs_of
from test_scripts import PY, script


def test_code_after_the_stop_that_fails_is_said_not_failed(tuimon):
    # 50 batches an epoch, stopped at 12 steps: no epoch ended, model.pt was never written.
    proc, session = tuimon("run", "--headless", "--modes", "eager", "--steps", "12", "--", PY,
                           script("save_reload.py"), "--batches", "50")
    assert proc.returncode == 0, proc.stderr
    _, runs = runs_of(session)
    kinds = runs["eager-script"]
    assert "failed" not in kinds
    assert kinds["finished"][0]["reason"] == "steps" and len(kinds["step"]) == 12
    note = next(w for w in kinds["warning"] if w.get("after_stop"))
    assert note["after_stop"].startswith("FileNotFoundError: [Errno 2] No such file or directory")
    assert "after tuimon stopped it (steps, at step 12)" in note["text"]
    assert "it was stopped before it wrote the file it reads there" in note["text"]
    assert "save_reload.py:53" in note["text"]
    summary = json.loads((session / "summary.json").read_text())
    assert summary["runs"][0]["status"] == "done"
    assert "after tuimon stopped it" in (session / "summary.md").read_text()


def test_an_uncaught_stop_reads_as_one_line(tuimon):
    proc, session = tuimon("run", "--headless", "--modes", "eager", "--steps", "8", "--", PY,
                           script("uncaught_stop.py"))
    assert proc.returncode == 0, proc.stderr
    log = (session / "logs" / "eager-script.log").read_text()
    assert "Traceback" not in log and "StopScript" not in log, log
    assert "tuimon: stopped the script after step 8 (its --steps are done)" in log
    assert "after the loop" not in log
    _, runs = runs_of(session)
    assert runs["eager-script"]["finished"][0]["reason"] == "steps"
