"""A real FSDP2 job under torchrun on the CPU (gloo, 2 ranks; tests/scripts/fsdp_train.py, a
2-block transformer): one variant a mode, the script's per-block compiles read and said (turned
off in eager), tuimon's own per-block compile when the script compiles none, and each rank's
time in FSDP's all-gathers and reduce-scatters. The compiles share the test session's Inductor
cache: the second job's blocks are the first one's graphs."""

from __future__ import annotations

import json
import sys

from conftest import SCRIPTS
from test_end_to_end import runs_of
from test_ranks import by_rank

FSDP = str(SCRIPTS / "fsdp_train.py")
JOB = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
       FSDP, "--layers", "2", "--dim", "32", "--seq", "16"]
BLOCKS = {"class": "TransformerBlock", "count": 2}


def lead_reading(kinds: dict) -> dict:
    (row,) = by_rank(kinds, "anatomy")[0][-1]["optimizers"]
    return row


def test_an_fsdp2_job_its_per_block_compiles_and_its_collectives(tuimon):
    proc, session = tuimon("run", "--headless", "--modes", "eager,default", "--steps", "40",
                           "--warmup", "4", "--", *JOB, "--compile", "block")
    assert proc.returncode == 0, proc.stderr
    _, runs = runs_of(session)
    assert set(runs) == {"eager-script", "default-script"}
    for run, kinds in runs.items():
        steps = by_rank(kinds, "step")
        assert sorted(steps) == [0, 1] and all(len(s) == 40 for s in steps.values())
        assert all(s.get("ph") and s.get("pre_ms") for r in (0, 1) for s in steps[r][1:])  # phases
        for rank, said in by_rank(kinds, "collectives").items():  # every window timed both
            assert sum(e["seconds"]["all_gather"] for e in said) > 0, (run, rank)
            assert sum(e["seconds"]["reduce_scatter"] for e in said) > 0, (run, rank)
            assert said[-1]["steps"][1] == 40 and said[0]["calls"]["all_gather"] > 0
    eager, default = runs["eager-script"], runs["default-script"]
    assert not eager.get("compile") and lead_reading(eager)["compiled"] == "variant"
    assert lead_reading(eager)["blocks"] == BLOCKS  # eager really eager: the script's compiles off
    assert default.get("compile") and lead_reading(default)["compiled"] == "script-blocks"
    assert lead_reading(default)["blocks"] == BLOCKS
    assert "loop: default/script: Transformer (fully_shard) compiled per block by the script: 2 × " \
           "TransformerBlock" in " ".join(proc.stdout.split())
    summary = json.loads((session / "summary.json").read_text())
    for row in summary["runs"]:
        for rank in row["job"]["ranks"]:
            assert rank["collectives"] and rank["all_gather_ms"] > 0 and rank["reduce_scatter_ms"] > 0
    md = (session / "summary.md").read_text()
    assert "| FSDP all-gather / reduce-scatter a step (time in them, per rank) | r0 all-gather " in md

    # The script compiles nothing: tuimon's compiled variant compiles each block, as torchtitan
    proc, session = tuimon("run", "--headless", "--modes", "default", "--steps", "12", "--", *JOB)
    assert proc.returncode == 0, proc.stderr
    _, runs = runs_of(session)
    kinds = runs["default-script"]
    assert kinds.get("compile") and lead_reading(kinds)["compiled"] == "tuimon-blocks"
    assert lead_reading(kinds)["blocks"] == BLOCKS
    assert "tuimon compiled Transformer per block (2 × TransformerBlock" in " ".join(proc.stdout.split())
