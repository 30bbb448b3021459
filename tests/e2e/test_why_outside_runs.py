"""The real runs of tests/unit/test_why_outside.py: the CLI in a child process, real scripts and compiles.
The pure tests of the same feature stay in tests/unit/test_why_outside.py."""

from __future__ import annotations

import json

from conftest import SCRIPTS
from test_end_to_end import runs_of
from test_why_outside import PY


def test_a_frozen_loss_network_run_twice_a_step_is_named_by_why(tuimon):
    """The real run: the automatic capture names the loss network (two calls a step) and the
    loss module, the Gram matrices' bmm outside any module; Why names the loss network's
    forward, not host work."""
    proc, session = tuimon("run", "--headless", "--modes", "eager", "--steps", "40", "--", PY,
                           str(SCRIPTS / "loss_network.py"), env={"OMP_NUM_THREADS": "1"})
    assert proc.returncode == 0, proc.stderr
    kinds = runs_of(session)[1]["eager-script"]
    (done,) = [p for p in kinds["profile"] if p.get("state") == "done"]
    mods = {m["name"]: m for m in done["outside"]["modules"]}
    assert mods["LossNet"]["calls"] == 2 and mods["MSELoss"]["calls"] == 5
    assert "Net (trained)" not in " ".join(mods) and "TransformerNet" not in mods
    ops = {o["name"]: o for o in done["outside"]["ops"]}
    assert ops["aten::bmm"]["calls"] == 4  # the four Gram matrices a step
    summary = json.loads((session / "summary.json").read_text())
    (why,) = summary["why"]
    titles = [f["title"] for f in why["findings"]]
    assert any("mostly LossNet's forward outside the trained module (2 calls a step)" in t
               for t in titles), titles
    assert not any(t.startswith("host work") for t in titles), titles
