"""The real runs of tests/unit/test_phases_ranks.py: the CLI in a child process, real scripts and compiles.
The pure tests of the same feature stay in tests/unit/test_phases_ranks.py."""

from __future__ import annotations

import json

from conftest import SCRIPTS
from test_phases_ranks import PY


def test_a_real_ddp_job_with_one_rank_slow_in_forward_names_forward(tuimon):
    proc, session = tuimon("run", "--headless", "--modes", "eager", "--steps", "60", "--",
                           PY, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
                           str(SCRIPTS / "ddp_train.py"), "--slow-forward-rank", "1",
                           "--slow-forward-ms", "8", timeout=420)
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((session / "summary.json").read_text())
    (row,) = summary["runs"]
    slow = row["job"]["stragglers"][0]
    assert slow["rank"] == 1 and slow["phase"] == "forward", row["job"]["stragglers"]
    assert slow["phase_ms"] > 5.0  # 8 ms of sleep a step, less what the clocks and load blur
    md = (session / "summary.md").read_text()
    assert "slow in forward (+" in md
