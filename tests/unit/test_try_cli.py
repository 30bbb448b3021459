"""tuimon try's command line (cli/try_fixes.py): the tried session's own command rebuilt with the
base variant, the fix axis and the length in their place."""

from argparse import Namespace
from pathlib import Path

from tuimon.analysis import RunStats
from tuimon.cli.try_fixes import rebuild, strip


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
    argv = rebuild(meta, Plan(base), ["none", "regional"], Path("/o"),
                   Namespace(budget=600.0, headless=False))
    assert argv[:8] == ["run", "--modes", "eager,default", "--out", "/o", "--set", "x=1", "--set"]
    assert argv[8] == "fix=none,regional" and argv[9] == "--duration"
    assert argv[-5:] == ["--", "python", "t.py", "--steps", "9"]  # the script's own --steps stays
    assert 10 < float(argv[10]) < 600


def test_strip_takes_both_spellings_of_an_option():
    assert strip(["--set", "a=1", "--set=b=2", "--modes", "x", "--headless", "r.py"],
                 {"--set": 1, "--modes": 1, "--headless": 0}) == ["r.py"]
