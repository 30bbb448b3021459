"""Every bad input: one line on stderr, exit code 2, no traceback, nothing launched needlessly."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import RECIPES, TEST_RECIPES

TINY = str(RECIPES / "tiny_mlp.py")
DATA = Path(__file__).resolve().parent / "data" / "session_tiny_mlp"

CASES = {
    "missing recipe": (["does_not_exist.py"], "recipe not found"),
    "not python": (["{tmp}/notes.txt"], "must be a Python file"),
    "directory": (["{tmp}"], "not a file"),
    "syntax error": (["{tmp}/broken.py"], "syntax error at line 1"),
    "no build": ([str(TEST_RECIPES / "no_build.py")], "does not define build(cfg)"),
    "unknown mode": ([TINY, "--modes", "eager,turbo"], "unknown mode 'turbo'"),
    "bad precision": ([TINY, "--precision", "fp16"], "unknown precision 'fp16'"),
    "empty modes": ([TINY, "--modes", ","], "no mode given"),
    "zero steps": ([TINY, "--steps", "0"], "--steps: must be positive"),
    "negative steps": ([TINY, "--steps", "-5"], "--steps: must be positive"),
    "text steps": ([TINY, "--steps", "many"], "expected a whole number"),
    "zero duration": ([TINY, "--duration", "0"], "--duration: must be positive"),
    "bad batch size": ([TINY, "--batch-size", "0"], "--batch-size: must be positive"),
    "bad device": ([TINY, "--device", "gpu"], "expected auto, cpu, cuda or cuda:N"),
    "bad set": ([TINY, "--set", "width"], "expected KEY=VALUE"),
    "unknown flag": ([TINY, "--turbo"], "unrecognized arguments: --turbo"),
    "unwritable out": ([TINY, "--out", "{tmp}/notes.txt/sub"], "cannot write sessions to"),
    "summary of nothing": (["summary", "{tmp}"], "not a tuimon session directory"),
    "detach and headless": ([TINY, "--detach", "--headless"], "--detach and --headless do not go"),
    "attach, no sessions dir": (["attach"], "no tuimon sessions in"),
    "attach, no session": (["attach", "--out", "{tmp}/empty"], "no tuimon session in"),
    "attach a non-session": (["attach", "{tmp}"], "not a tuimon session directory"),
    "attach a missing dir": (["attach", "{tmp}/nope"], "not a tuimon session directory"),
    "attach without a tty": (["attach", str(DATA)], "attach needs an interactive terminal"),
    "attach, bad fps": (["attach", str(DATA), "--fps", "0"], "--fps: must be positive"),
    "ls, missing dir": (["ls", "--out", "{tmp}/nope"], "no such directory"),
    "ls, unknown flag": (["ls", "--all"], "unrecognized arguments: --all"),
}


@pytest.mark.parametrize("name", CASES)
def test_bad_input_is_one_line_and_exit_2(name, tuimon, tmp_path):
    (tmp_path / "notes.txt").write_text("not a recipe")
    (tmp_path / "broken.py").write_text("def build(cfg:\n")
    (tmp_path / "empty").mkdir()
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


def test_cuda_requested_without_cuda(tuimon):
    proc, _ = tuimon(TINY, "--device", "cuda", "--modes", "eager", "--steps", "5")
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1
    assert "CUDA is not available" in proc.stderr
