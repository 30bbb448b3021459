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
