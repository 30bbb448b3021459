"""``tuimon run -- accelerate launch train.py`` (issue 44): a plain accelerate loop, unchanged,
hooked in the process accelerate starts for it. Its steps are the optimizer's real ones (under
gradient accumulation accelerate's wrapper skips the others), the eager variant is eager although
accelerate is asked to compile (--dynamo_backend), and the compiled one compiles through
accelerate's own torch.compile call."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from conftest import SCRIPTS
from test_end_to_end import runs_of

pytest.importorskip("accelerate")
ACCELERATE = str(Path(sys.executable).parent / "accelerate")  # the console script, as a user runs it


def test_an_accelerate_launch_is_hooked_in_its_child_and_read_as_accelerate_runs_it(tuimon):
    proc, session = tuimon("run", "--headless", "--modes", "eager,default", "--steps", "16", "--",
                           ACCELERATE, "launch", "--cpu", "--num_processes", "2",
                           "--dynamo_backend", "inductor", str(SCRIPTS / "accelerate_loop.py"),
                           "--accum", "4", "--epochs", "4")
    assert proc.returncode == 0, proc.stderr[-3000:]
    # --num_processes 2 without --multi_gpu: accelerate starts one process, and tuimon says so
    assert "accelerate launch starts one process here" in proc.stderr
    evs, runs = runs_of(session)
    for run in ("eager-script", "default-script"):
        steps = runs[run]["step"]
        assert len(steps) == 16, (run, len(steps))
        anatomy = runs[run]["anatomy"][-1]
        assert anatomy["backwards"] == {"4": 16}  # four micro-batches a step: accumulation seen
        assert anatomy["optimizers"][0]["optimizer"] == "AdamW"
    assert not runs["eager-script"].get("compile")  # eager, though accelerate asked to compile
    assert runs["default-script"]["compile"]  # ... and the compiled variant compiled through it
    assert "loop: loss: the sum of the 4 backward() losses" in proc.stdout


def test_a_multi_process_accelerate_launch_says_how_to_run_it(tuimon, tmp_path):
    config = tmp_path / "multi.yaml"
    config.write_text("compute_environment: LOCAL_MACHINE\ndistributed_type: MULTI_GPU\n"
                      "num_processes: 2\nmixed_precision: 'no'\n")
    proc, session = tuimon("run", "--headless", "--", ACCELERATE, "launch", "--config_file",
                           str(config), str(SCRIPTS / "accelerate_loop.py"))
    assert proc.returncode == 2 and session is None
    assert proc.stderr.count("\n") == 1 and "distributed_type MULTI_GPU" in proc.stderr
    assert "torchrun --nproc-per-node" in proc.stderr and "Traceback" not in proc.stderr
