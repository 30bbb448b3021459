"""tuimon try's command line (cli/try_fixes.py): the tried session's own command rebuilt with the
base variant, the fix axis and the length in their place; --budget's length from the tried
session's own compiles and steps."""

import shutil
from argparse import Namespace
from pathlib import Path

from synthetic_session import session

from tuimon.analysis import RunStats, load_session
from tuimon.cli.budget import GUESS_S
from tuimon.cli.try_fixes import budget_for, rebuild, strip, try_command, try_parser
from tuimon.report.try_text import budget_line

DATA = Path(__file__).parents[1] / "data"


class Plan:
    def __init__(self, base):
        self.base = base


def test_a_recipe_sweep_becomes_a_recipe_session_of_its_best_variant_and_the_fixes():
    meta = {"argv": ["tuimon", "sweep", "r.py", "--budget", "10m", "--set", "bs=8,16", "--set",
                     "lr=1", "--modes", "eager,default", "--headless", "--try"],
            "run_settings": {"knobs": [["lr", "1"]]}}
    base = RunStats("default-fp32-bs_8", "default", "fp32", axes={"bs": "8"})
    argv = rebuild(meta, Plan(base), ["none", "dynamic"], Path("/o"), Namespace(budget=None, headless=True))
    assert argv == ["r.py", "--modes", "eager,default", "--out", "/o", "--precision", "fp32",
                    "--set", "lr=1", "--set", "bs=8", "--set", "fix=none,dynamic", "--headless"]


def test_a_script_keeps_its_command_and_a_budget_sets_the_length():
    meta = {"argv": ["tuimon", "run", "--steps", "30", "--set=x=1", "--", "python", "t.py", "--steps", "9"],
            "run_settings": {"knobs": [["x", "1"]]}}
    base = RunStats("default-script", "default", "script")
    length = budget_for(600.0, 3, meta, base, [])
    argv = rebuild(meta, Plan(base), ["none", "regional"], Path("/o"),
                   Namespace(budget=600.0, headless=False), length)
    assert argv[:8] == ["run", "--modes", "eager,default", "--out", "/o", "--set", "x=1", "--set"]
    assert argv[8] == "fix=none,regional" and argv[9] == "--duration"
    assert argv[-5:] == ["--", "python", "t.py", "--steps", "9"]  # the script's own --steps stays
    assert 10 < float(argv[10]) < 600
    assert "none measured in the tried session's own compiles: guessed" in length["text"]


def test_a_budget_uses_the_tried_sessions_own_compiles_and_steps(tmp_path):
    """Issue 40.6: the tried session measured its compiles; no 60 s guess, and the plan says so."""
    _, _, summary = load_session(session(tmp_path, "s"))
    base = next(r for r in summary.runs if r.compiled)
    meta = {"argv": ["tuimon", "r.py"], "settings": {"repeats": 1}}
    length = budget_for(300.0, 3, meta, base, summary.runs)
    assert length["compile_s"] == round(2 * base.compile.compile_s, 1)  # the two compiled runs'
    assert length["from_history"] == 2 and "from the tried session's own compiles" in length["text"]
    assert length["steps"] == int(length["full_s"] * 1000 / base.timing.median_ms)
    line = budget_line(length, base)
    assert line.startswith("try: --budget 5.0 min: each of 3 runs steps for")
    assert f"steps a run at {base.label}'s median step of" in line
    guessed = budget_for(300.0, 3, meta, base, [])
    assert guessed["compile_s"] == 2 * GUESS_S and guessed["from_history"] == 0


def test_strip_takes_both_spellings_of_an_option():
    assert strip(["--set", "a=1", "--set=b=2", "--modes", "x", "--headless", "r.py"],
                 {"--set": 1, "--modes": 1, "--headless": 0}) == ["r.py"]


def test_the_printed_plan_says_the_budgets_length_and_what_it_stands_on(tmp_path, capsys):
    session = Path(shutil.copytree(DATA / "session_tiny_mlp", tmp_path / "s"))
    assert try_command(try_parser().parse_args([str(session), "--budget", "5m", "--plan"])) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[-1].startswith("try: --budget 5.0 min: each of 3 runs steps for")
    assert "(from the tried session's own compiles); ~" in out[-1]
    assert out[-1].endswith("steps a run at default/fp32's median step of 0.520 ms in the tried session")
