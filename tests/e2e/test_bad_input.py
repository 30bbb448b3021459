"""Every bad input: one line on stderr, exit code 2, no traceback, nothing launched needlessly."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest
from conftest import RECIPES, TEST_RECIPES

TINY = str(RECIPES / "tiny_mlp.py")
DATA = Path(__file__).resolve().parents[1] / "data" / "session_tiny_mlp"

CASES = {
    "missing recipe": (["does_not_exist.py"], "recipe not found"),
    "not python": (["{tmp}/notes.txt"], "must be a Python file"),
    "directory": (["{tmp}"], "not a file"),
    "syntax error": (["{tmp}/broken.py"], "syntax error at line 1"),
    "no build": ([str(TEST_RECIPES / "no_build.py")], "does not define build(cfg)"),
    "unknown mode": ([TINY, "--modes", "eager,turbo"], "unknown mode 'turbo'"),
    "bad precision": ([TINY, "--precision", "fp16"], "unknown precision 'fp16'"),
    "empty modes": ([TINY, "--modes", ","], "no mode given"),
    "zero steps": ([TINY, "--steps", "0"], "--steps: must be between 1 and 1,000,000,000, got 0"),
    "zero repeats": ([TINY, "--repeats", "0"], "--repeats: must be between 1 and 20, got 0"),
    "absurd repeats": ([TINY, "--repeats", "500"], "--repeats: must be between 1 and 20, got 500"),
    "negative steps": ([TINY, "--steps", "-5"], "--steps: must be between 1 and"),
    "absurd steps": ([TINY, "--steps", str(10**13)], "--steps: must be between 1 and 1,000,000,000"),
    "text steps": ([TINY, "--steps", "many"], "expected a whole number"),
    "zero duration": ([TINY, "--duration", "0"], "--duration: must be between 0.1 and 2,592,000 s"),
    "absurd duration": ([TINY, "--duration", "1e12"], "--duration: must be between 0.1 and 2,592,000 s"),
    "nan duration": ([TINY, "--duration", "nan"], "--duration: must be between"),
    "bad batch size": ([TINY, "--batch-size", "0"], "--batch-size: must be between 1 and 1,000,000"),
    "absurd batch size": ([TINY, "--batch-size", str(10**9)], "--batch-size: must be between 1 and"),
    "zero image size": ([TINY, "--image-size", "0"], "--image-size: must be between 1 and 16,384"),
    "absurd image size": ([TINY, "--image-size", "100000"], "--image-size: must be between 1 and 16,384"),
    "fast interval": ([TINY, "--interval", "0.01"], "--interval: must be between 0.2 and 3,600 s"),
    "slow interval": ([TINY, "--interval", "1e9"], "--interval: must be between 0.2 and 3,600 s"),
    "zero turn steps": ([TINY, "--turn-steps", "0"], "--turn-steps: must be between 1 and"),
    "zero hang timeout": ([TINY, "--hang-timeout", "0"], "--hang-timeout: must be between 1 and"),
    "negative hang timeout": ([TINY, "--hang-timeout", "-1"], "--hang-timeout: must be between 1 and"),
    "fast fps": ([TINY, "--fps", "1000"], "--fps: must be between 1 and 30, got 1000"),
    "negative warmup": ([TINY, "--warmup", "-1"], "--warmup: must be between 0 and"),
    "negative profile step": ([TINY, "--profile-at", "-3"], "--profile-at: must be between 0 and"),
    "negative seed": ([TINY, "--seed", "-1"], "--seed: must be between 0 and 4,294,967,295"),
    "huge seed": ([TINY, "--seed", str(2**32)], "--seed: must be between 0 and 4,294,967,295"),
    "bad device": ([TINY, "--device", "gpu"], "expected auto, cpu, cuda or cuda:N"),
    "bad device mps": ([TINY, "--device", "mps"], "expected auto, cpu, cuda or cuda:N"),
    "bad device cpu:0": ([TINY, "--device", "cpu:0"], "expected auto, cpu, cuda or cuda:N"),
    "bad set": ([TINY, "--set", "width"], "expected KEY=VALUE"),
    "set, empty key": ([TINY, "--set", "=512"], "expected KEY=VALUE, got '=512'"),
    "set given twice": ([TINY, "--set", "width=64", "--set", "width=128"],
                        "--set width given twice: give its values as one list"),
    "set, empty value in a list": ([TINY, "--set", "width=64,,128"], "an empty value in the list"),
    "bad horizon": ([TINY, "--horizon", "soon"], "expected steps (50000) or a length of time"),
    "zero horizon": ([TINY, "--horizon", "0"], "--horizon: must be between 1 and"),
    "negative loss tolerance": ([TINY, "--loss-tolerance", "-1"], "--loss-tolerance: must be between 0"),
    "sweep, budget and steps": (["sweep", TINY, "--budget", "10m", "--steps", "5"],
                                "--budget sizes each run's steps itself"),
    "sweep, bad budget": (["sweep", TINY, "--budget", "soon"], "expected a length of time"),
    "sweep, tiny budget": (["sweep", TINY, "--budget", "5s"], "--budget: must be between 10 and"),
    "sweep, budget too short": (["sweep", TINY, "--budget", "30s"], "is too short for 6 runs"),
    "sweep, script amp": (["sweep", "--precision", "amp", "--", "python", "x.py"],
                          "a script owns its autocast"),
    "summary, bad horizon": (["summary", str(DATA), "--horizon", "2x"], "expected steps (50000)"),
    "unknown flag": ([TINY, "--turbo"], "unrecognized arguments: --turbo"),
    "unwritable out": ([TINY, "--out", "{tmp}/notes.txt/sub"], "cannot write sessions to"),
    "out is a file": ([TINY, "--out", "{tmp}/notes.txt"], "cannot write sessions to"),
    "summary of nothing": (["summary", "{tmp}"], "not a tuimon session directory (no events.jsonl)"),
    "summary of a file": (["summary", "{tmp}/notes.txt"], "not a tuimon session directory (not a directory)"),
    "summary of a missing dir": (["summary", "{tmp}/nope"], "not a tuimon session directory (no such"),
    "summary, garbage events": (["summary", "{tmp}/garbage"], "its events.jsonl holds no readable event"),
    "summary, binary events": (["summary", "{tmp}/binary"], "its events.jsonl holds no readable event"),
    "summary, empty events, no meta": (["summary", "{tmp}/hollow"], "its events.jsonl is empty"),
    "summary, meta.json missing": (["summary", "{tmp}/no_meta"],
                                   "not a complete tuimon session (meta.json missing)"),
    "summary, meta.json corrupt": (["summary", "{tmp}/bad_meta"],
                                   "not a complete tuimon session (meta.json unreadable)"),
    "replay, meta.json missing": (["replay", "{tmp}/no_meta"], "'tuimon summary --force' summarizes"),
    "attach, meta.json missing": (["attach", "{tmp}/no_meta"], "not a complete tuimon session"),
    "summary, bad format": (["summary", str(DATA), "--format", "xml"], "invalid choice: 'xml'"),
    "replay a non-session": (["replay", "{tmp}"], "not a tuimon session directory (no events.jsonl)"),
    "replay, garbage events": (["replay", "{tmp}/garbage"], "its events.jsonl holds no readable event"),
    "replay, bad fps": (["replay", str(DATA), "--fps", "31"], "--fps: must be between 1 and 30"),
    "attach, garbage events": (["attach", "{tmp}/garbage"], "its events.jsonl holds no readable event"),
    "detach and headless": ([TINY, "--detach", "--headless"], "--detach and --headless do not go"),
    "attach, no sessions dir": (["attach"], "no tuimon sessions in"),
    "attach, no session": (["attach", "--out", "{tmp}/empty"], "no tuimon session in"),
    "attach a non-session": (["attach", "{tmp}"], "not a tuimon session directory"),
    "attach a missing dir": (["attach", "{tmp}/nope"], "not a tuimon session directory"),
    "attach without a tty": (["attach", str(DATA)], "attach needs an interactive terminal"),
    "attach, bad fps": (["attach", str(DATA), "--fps", "0"], "--fps: must be between 1 and 30"),
    "ls, missing dir": (["ls", "--out", "{tmp}/nope"], "no such directory"),
    "ls, unknown flag": (["ls", "--all"], "unrecognized arguments: --all"),
}


@pytest.mark.parametrize("name", CASES)
def test_bad_input_is_one_line_and_exit_2(name, tuimon, tmp_path):
    (tmp_path / "notes.txt").write_text("not a recipe")
    (tmp_path / "broken.py").write_text("def build(cfg:\n")
    (tmp_path / "empty").mkdir()
    garbage = tmp_path / "garbage"  # a directory with a corrupt store and a fine meta.json
    garbage.mkdir()
    (garbage / "events.jsonl").write_text("not json\n{\"no\": \"type\"}\n[1, 2]\n{\"type\": \"st")
    (garbage / "meta.json").write_text((DATA / "meta.json").read_text())
    binary = tmp_path / "binary"
    binary.mkdir()
    (binary / "events.jsonl").write_bytes(bytes(range(256)) * 64)
    for damaged, meta in (("no_meta", None), ("bad_meta", "{\"name\": ")):
        shutil.copytree(DATA, tmp_path / damaged)
        (tmp_path / damaged / "meta.json").unlink()
        if meta is not None:
            (tmp_path / damaged / "meta.json").write_text(meta)
    (tmp_path / "hollow").mkdir()
    (tmp_path / "hollow" / "events.jsonl").write_text("")
    args, expected = CASES[name]
    proc, session = tuimon(*[a.format(tmp=tmp_path) for a in args])
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("tuimon: error: ")
    assert expected in lines[0]
    assert "Traceback" not in proc.stdout + proc.stderr
    assert session is None  # rejected before any session directory was made


@pytest.mark.parametrize("recipe, expected", [
    ("raises_in_build.py", "raised while building at raises_in_build.py:2: ValueError: boom"),
    ("wrong_type.py", "build(cfg) must return tuimon.recipe.Recipe, got dict"),
])
def test_recipe_failing_in_the_child_is_one_line_and_exit_2(recipe, expected, tuimon):
    proc, session = tuimon(str(TEST_RECIPES / recipe), "--modes", "eager,default",
                           "--precision", "fp32,amp", "--schedule", "parallel")
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert expected in lines[0]
    assert "Traceback" not in proc.stdout + proc.stderr
    # The child's own traceback is kept in the run's log for whoever wants it.
    logs = list((session / "logs").glob("*.log"))
    assert any("Traceback" in log.read_text() for log in logs)


@pytest.mark.parametrize("device", ["cuda", "cuda:99"])
def test_cuda_requested_without_cuda(tuimon, device):
    """Needs torch to tell, so the runner says it; on a GPU box cuda:99 is an index too far."""
    import torch

    if torch.cuda.is_available() and device == "cuda":
        pytest.skip("CUDA is available here")
    proc, _ = tuimon(TINY, "--device", device, "--modes", "eager", "--steps", "5")
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1
    assert ("CUDA device" if torch.cuda.is_available() else "CUDA is not available") in proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr


def test_a_compile_cache_in_the_working_directory_itself_is_refused(tuimon, tmp_path):
    """Each variant's writes in the working directory go to its own view, Inductor's C++ builds
    to the real path: a cache that is the working directory cannot be both."""
    (tmp_path / "x.py").write_text("print('never run')\n")
    proc, session = tuimon("run", "--headless", "--cache-dir", str(tmp_path), "--", sys.executable,
                           "x.py", cache=False)
    assert proc.returncode == 2 and session is None
    lines = proc.stderr.strip().splitlines()
    assert lines == ["tuimon: error: --cache-dir is the working directory, whose files tuimon keeps "
                     "apart for each variant: give the compile cache a directory of its own (e.g. "
                     "--cache-dir .tuimon-cache)"]
