"""Reading an ``accelerate launch`` command without accelerate (tuimon/accelerate_launch.py): the
training script after its options, and whether accelerate starts one process or several."""

import pytest

from tuimon import accelerate_launch as al


def parsed(*words: str, python: bool = False) -> al.AccelerateLaunch:
    command = list(words)
    start = al.is_accelerate(command, python)
    assert start is not None
    return al.parse(command, start)


def test_the_three_spellings_are_recognised_and_others_are_not():
    assert al.is_accelerate(["accelerate", "launch", "t.py"], False) == 2
    assert al.is_accelerate(["/v/bin/accelerate-launch", "t.py"], False) == 1
    assert al.is_accelerate(["python", "-m", "accelerate.commands.launch", "t.py"], True) == 3
    assert al.is_accelerate(["python", "-m", "accelerate.commands.accelerate_cli", "launch",
                             "t.py"], True) == 4
    assert al.is_accelerate(["accelerate", "config"], False) is None
    assert al.is_accelerate(["python", "train.py"], True) is None


def test_options_with_and_without_values_are_skipped_to_the_script(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HOME", str(tmp_path))  # no default config
    launch = parsed("accelerate", "launch", "--cpu", "--mixed_precision", "bf16",
                    "--num-processes=2", "--dynamo_use_fullgraph", "train.py", "--lr", "1")
    assert launch.script_words == ["train.py", "--lr", "1"]
    assert launch.options["--mixed-precision"] == "bf16" and launch.processes == 2
    assert launch.multi() is None  # --num_processes alone: accelerate starts one process


def test_multi_process_launches_are_told_apart(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    assert parsed("accelerate", "launch", "--multi_gpu", "t.py").multi() == "--multi_gpu"
    assert parsed("accelerate", "launch", "--use_fsdp", "t.py").multi() == "--use_fsdp"
    config = tmp_path / "c.yaml"
    config.write_text("distributed_type: FSDP  # sharded\nnum_processes: 4\n")
    launch = parsed("accelerate", "launch", "--config_file", str(config), "t.py")
    assert launch.multi() == "the config's distributed_type FSDP" and launch.processes == 4
    # the default config is read where accelerate reads it, and skipped with --cpu as it does
    (tmp_path / "accelerate").mkdir()
    (tmp_path / "accelerate" / "default_config.yaml").write_text("distributed_type: MULTI_GPU\n")
    assert parsed("accelerate", "launch", "t.py").multi() is not None
    assert parsed("accelerate", "launch", "--cpu", "t.py").multi() is None


def test_bad_commands_are_one_line(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    with pytest.raises(al.AccelerateError, match="without a training script"):
        parsed("accelerate", "launch", "--cpu")
    with pytest.raises(al.AccelerateError, match="needs a value"):
        parsed("accelerate", "launch", "--mixed_precision")
    with pytest.raises(al.AccelerateError, match="no such file"):
        parsed("accelerate", "launch", "--config_file", str(tmp_path / "none.yaml"), "t.py")


def test_what_tuimon_cannot_take_is_refused_and_a_multi_gpu_launch_is_not(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    for flag, what in (("--use_deepspeed", "DeepSpeed"), ("--use_megatron_lm", "Megatron-LM"),
                       ("--tpu", "TPUs")):
        assert what in parsed("accelerate", "launch", flag, "t.py").refused()
    assert "mpirun" in parsed("accelerate", "launch", "--mpirun_hostfile", "h", "t.py").refused()
    assert "several machines" in parsed("accelerate", "launch", "--multi_gpu", "--num_machines",
                                        "2", "t.py").refused()
    assert "ACCELERATE_USE_CPU=1" in parsed("accelerate", "launch", "--cpu", "--multi_gpu",
                                            "t.py").refused()
    config = tmp_path / "ds.yaml"
    config.write_text("distributed_type: DEEPSPEED\nnum_processes: 2\n")
    assert "DeepSpeed" in parsed("accelerate", "launch", "--config_file", str(config), "t.py").refused()
    for words in (("--multi_gpu", "--num_processes", "2"), ("--use_fsdp",), ("--cpu",), ()):
        assert parsed("accelerate", "launch", *words, "t.py").refused() is None, words
    launch = parsed("accelerate", "launch", "--multi_gpu", "--num_processes=3", "t.py")
    assert launch.nproc == 3 and parsed("accelerate", "launch", "--multi_gpu", "t.py").nproc is None


def test_each_variant_gets_its_own_rendezvous_port(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    launch = parsed("accelerate", "launch", "--multi_gpu", "t.py", "--lr", "1")
    assert launch.with_port_offset(0) == launch.words and launch.port_text(0) is None
    # accelerate's own default, 29500, moved by the variant's place; the script's words kept
    assert launch.with_port_offset(2) == ["accelerate", "launch", "--multi_gpu",
                                          "--main_process_port", "29502", "t.py", "--lr", "1"]
    assert launch.port_text(2).startswith("rendezvous port 29502 (29500 + 2")
    given = parsed("accelerate", "launch", "--multi_gpu", "--main_process_port", "4000", "t.py")
    assert given.with_port_offset(1)[3:5] == ["--main_process_port", "4001"]
    joined = parsed("accelerate", "launch", "--multi_gpu", "--main-process-port=4000", "t.py")
    assert joined.with_port_offset(1)[3] == "--main-process-port=4001"
    config = tmp_path / "c.yaml"
    config.write_text("distributed_type: MULTI_GPU\nmain_process_port: 5000\n")
    from_config = parsed("accelerate", "launch", "--config_file", str(config), "t.py")
    assert from_config.with_port_offset(1)[-3:] == ["--main_process_port", "5001", "t.py"]
    free = parsed("accelerate", "launch", "--multi_gpu", "--main_process_port", "0", "t.py")
    assert free.with_port_offset(1) == free.words  # 0: accelerate picks a free port itself
    one = parsed("accelerate", "launch", "--cpu", "t.py")
    assert one.with_port_offset(1) == one.words  # one process: no rendezvous


def test_a_scripts_job_command_is_read_by_its_launcher(monkeypatch, tmp_path):
    from tuimon.torchrun import Torchrun, job_command

    monkeypatch.setenv("HF_HOME", str(tmp_path))
    launch = job_command(["accelerate", "launch", "--multi_gpu", "--num_processes", "2", "t.py"])
    assert isinstance(launch, al.AccelerateLaunch) and launch.nproc == 2
    job = job_command(["torchrun", "--nproc-per-node", "4", "t.py"])
    assert isinstance(job, Torchrun) and job.nproc == 4


def test_ranks_accelerate_starts_unplanned_fail_the_run_in_one_line():
    """In accelerate's process of a launch read as one process: torch's launcher starting a
    worker (accelerate found several GPUs) ends it, said as the run's failure, before any rank."""
    import json
    import os
    import subprocess
    import sys

    code = """
import subprocess, sys
from tuimon.runner.script import hooks
from tuimon.settings import RunSettings
s = RunSettings.make(run="eager-script", command=("accelerate", "launch", "t.py"),
                     launcher="accelerate", event_fd=int(sys.argv[1]))
hooks._launcher(s)
subprocess.run([sys.executable, "-c", "pass"], check=True)  # accelerate's one child: started
print("child ok", flush=True)
subprocess.Popen([sys.executable, "-c", "pass"], env={"TORCHELASTIC_RUN_ID": "none"})
print("worker started", flush=True)
"""
    r, w = os.pipe()
    try:
        proc = subprocess.run([sys.executable, "-c", code, str(w)], capture_output=True, text=True,
                              timeout=60, pass_fds=(w,))
        os.close(w)
        said = os.read(r, 65536).decode()
    finally:
        os.close(r)
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout.splitlines() == ["child ok"]  # no worker started
    failed = json.loads(said)
    assert failed["type"] == "failed" and "--multi_gpu" in failed["message"]
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
