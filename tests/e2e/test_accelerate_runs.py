"""``tuimon run -- accelerate launch train.py`` (issue 44): a plain accelerate loop, unchanged,
hooked in the process accelerate starts for it, or in each of the ranks a multi-process launch
starts (a torchrun job). Its steps are the optimizer's real ones (under
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


MULTI_CONFIG = """compute_environment: LOCAL_MACHINE
distributed_type: MULTI_GPU
num_processes: 2
mixed_precision: bf16
dynamo_config:
  dynamo_backend: INDUCTOR
"""


def test_a_two_process_accelerate_launch_is_a_job_of_two_ranks(tuimon, tmp_path):
    """A config of two processes, bf16 and accelerate's own compile, on the CPU
    (ACCELERATE_USE_CPU=1: gloo, accelerate's MULTI_CPU): torch's launcher inside accelerate's
    process starts two ranks, each hooked and reporting on its own, with the settings
    accelerate's launcher gave them; eager is eager though the config asks to compile, and the
    second variant's rendezvous port is moved."""
    config = tmp_path / "two.yaml"
    config.write_text(MULTI_CONFIG)
    proc, session = tuimon("run", "--headless", "--modes", "eager,default", "--steps", "10", "--",
                           ACCELERATE, "launch", "--config_file", str(config),
                           str(SCRIPTS / "accelerate_loop.py"), "--accum", "2", "--epochs", "4",
                           env={"ACCELERATE_USE_CPU": "1"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    evs, runs = runs_of(session)
    for run in ("eager-script", "default-script"):
        kinds = runs[run]
        ranks = {e["rank"] for e in kinds["step"]}
        assert ranks == {0, 1}, (run, ranks)  # both ranks' steps seen, each on its own
        for rank in (0, 1):
            assert len([e for e in kinds["step"] if e["rank"] == rank]) == 10, (run, rank)
            anatomy = [e for e in kinds["anatomy"] if e.get("rank") == rank][-1]
            assert anatomy["backwards"] == {"2": 10}, (run, rank)  # accumulation read on each
        log = (session / "logs" / f"{run}.log").read_text()
        for rank in (0, 1):  # what accelerate's launcher set, as each rank's Accelerator read it
            assert f"process {rank} of 2: DistributedType.MULTI_CPU, mixed precision bf16" in log
        assert "exited with code" not in " ".join(w["text"] for w in kinds.get("warning", []))
    assert not runs["eager-script"].get("compile")  # no rank compiled in the eager variant
    assert {e["rank"] for e in runs["default-script"]["compile"]} == {0, 1}  # both did here
    notes = [w["text"] for w in runs["default-script"]["warning"]]
    assert any(t.startswith("rendezvous port 29501 (29500 + 1") for t in notes), notes


def test_what_accelerate_runs_through_another_launcher_is_one_line(tuimon, tmp_path):
    config = tmp_path / "ds.yaml"
    config.write_text("compute_environment: LOCAL_MACHINE\ndistributed_type: DEEPSPEED\n"
                      "num_processes: 2\nmixed_precision: 'no'\n")
    proc, session = tuimon("run", "--headless", "--", ACCELERATE, "launch", "--config_file",
                           str(config), str(SCRIPTS / "accelerate_loop.py"))
    assert proc.returncode == 2 and session is None
    assert proc.stderr.count("\n") == 1 and "DeepSpeed" in proc.stderr
    assert "Traceback" not in proc.stderr
