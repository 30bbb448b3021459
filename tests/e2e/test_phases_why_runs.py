"""The real runs of tests/unit/test_phases_why.py: the CLI in a child process, real scripts and compiles.
The pure tests of the same feature stay in tests/unit/test_phases_why.py."""

from __future__ import annotations

import re


def test_a_data_bound_script_is_named_input_bound_with_its_share(tuimon):
    """slow_data.py: 32 items of 1 ms a batch, read in the main process, a tiny MLP."""
    import json
    import sys

    from conftest import SCRIPTS

    proc, session = tuimon("run", "--headless", "--modes", "eager", "--steps", "30", "--",
                           sys.executable, str(SCRIPTS / "slow_data.py"), "--item-ms", "1",
                           env={"OMP_NUM_THREADS": "1"})
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((session / "summary.json").read_text())
    (why,) = summary["why"]
    assert why["label"] == "eager/script" and not why["compiled"]
    first = why["findings"][0]
    assert first["rule"] == "input_bound"
    share = int(re.fullmatch(r"input-bound: (\d+)% of each step waits for data", first["title"])[1])
    (row,) = summary["runs"]
    assert share == round(row["phases"]["step_phases"]["data"]["share"] * 100) and share >= 50
    assert "input-bound" in proc.stdout  # the terminal's why lines
