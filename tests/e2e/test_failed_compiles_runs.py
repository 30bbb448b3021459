"""The real runs of tests/unit/test_failed_compiles.py: the CLI in a child process, real scripts and compiles.
The pure tests of the same feature stay in tests/unit/test_failed_compiles.py."""

from __future__ import annotations

import json

from conftest import SCRIPTS, TEST_RECIPES
from test_end_to_end import runs_of
from test_failed_compiles import PY, RNN


# ---- the scripts, run by tuimon ------------------------------------------------------------------
def test_an_lstm_script_whose_compile_fails_is_said_to_have_compiled_nothing(tuimon):
    """mnist_rnn's reproduction: the compiled variant's only compile fails. finished counts no
    compile, no graph break is said, the verdict and summary say nothing was compiled, with
    torch's reason, and the losses equal eager's (it ran eager)."""
    proc, session = tuimon("run", "--headless", "--modes", "eager,default", "--steps", "24", "--",
                           PY, str(SCRIPTS / "lstm_classifier.py"), timeout=600)
    assert proc.returncode == 0, proc.stderr
    _, runs = runs_of(session)
    compiled = runs["default-script"]
    (attempt,) = [c for c in compiled["compile"] if not c.get("validation")]
    assert attempt["failed"] == "Unsupported" and attempt["graph"] is False
    assert "graph_break" not in compiled
    assert compiled["finished"][0]["compiles"] == 0
    data = json.loads((session / "summary.json").read_text())
    row = {r["run"]: r for r in data["runs"]}["default-script"]
    why = f"Dynamo could not compile forward() (lstm_classifier.py:29): {RNN}"
    assert row["compile"]["graphs_fwd"] == 0 and row["words"]["nothing_compiled"] == why
    assert row["compile"]["nothing_compiled"]["code"] == "failed"  # the decision, as a code
    assert data["verdict"]["kind"] == "none"
    assert data["verdict"]["line"] == f"Verdict: no answer: nothing was compiled in default/script — {why}."
    md = (session / "summary.md").read_text()
    assert "1 fwd + 0 bwd graphs" not in md and "| nothing compiled |" in md.replace("  ", " ")
    assert "pays off after" not in md.split("compile pays off after")[1].split("\n")[0]
    eager_losses = [s["loss"] for s in runs["eager-script"]["step"]]
    assert [s["loss"] for s in compiled["step"]] == eager_losses
    assert "could not compile 0/0 forward()" in proc.stdout and f"({RNN}: it runs eager)" in proc.stdout


def test_a_sparse_graph_script_whose_compiles_all_fail_compiled_nothing(tuimon):
    """gcn's reproduction: both of Dynamo's attempts (eval passes, no grad) fail on the sparse
    tensors; training never compiles. The summary says the variant compiled nothing, and why."""
    proc, session = tuimon("run", "--headless", "--modes", "eager,default", "--", PY,
                           str(SCRIPTS / "sparse_gcn.py"), "--epochs", "16", timeout=600)
    assert proc.returncode == 0, proc.stderr
    _, runs = runs_of(session)
    failed = [c for c in runs["default-script"]["compile"] if c.get("failed")]
    assert failed and all("sparse Tensor" in c["fail_reason"] for c in failed)
    assert not [c for c in runs["default-script"]["compile"] if c.get("graph")]
    data = json.loads((session / "summary.json").read_text())
    row = {r["run"]: r for r in data["runs"]}["default-script"]
    said = row["words"]["nothing_compiled"]
    assert said.startswith("Dynamo could not compile forward() (sparse_gcn.py:")
    assert "Attempted to wrap sparse Tensor" in said
    assert data["verdict"]["kind"] == "none"
    assert "nothing was compiled in default/script" in data["verdict"]["line"]


def test_a_recipe_whose_compile_fails_compiled_nothing_too(tuimon):
    """The recipe runner counts the same way: its finished event says 0 compiles."""
    proc, session = tuimon(str(TEST_RECIPES / "lstm_head.py"), "--headless", "--modes", "eager,default",
                           "--steps", "30", "--device", "cpu")
    assert proc.returncode == 0, proc.stderr
    _, runs = runs_of(session)
    assert runs["default-fp32"]["finished"][0]["compiles"] == 0
    data = json.loads((session / "summary.json").read_text())
    assert data["verdict"]["line"] == ("Verdict: no answer: nothing was compiled in default/fp32 — Dynamo "
                                       f"could not compile forward() (lstm_head.py:18): {RNN}.")
