"""--until-known's flags (cli/known.py): the default for a script given no length, what --budget
and --margin mean where, and what contradicts them (one line, exit 2)."""

from __future__ import annotations

import pytest

from tuimon.cli.args import UsageError
from tuimon.cli.known import until_known
from tuimon.cli.run_flags import run_parser
from tuimon.cli.sweep import sweep_parser
from tuimon.cli.try_fixes import LENGTH, rebuild, strip

CMD = ["python", "train.py"]


def spec(argv: list[str], command: list[str] | None = None, sweep: bool = False):
    args = (sweep_parser() if sweep else run_parser()).parse_args(argv)
    return until_known(args, command, sweep=sweep), args


def test_a_script_given_no_length_runs_until_known_with_the_defaults():
    got, args = spec([], CMD)
    assert got["margin"] == 0.03 and got["budget_s"] == 900.0 and got["min_rounds"] == 3
    assert args.repeats == 1  # a round at a time
    assert spec(["--steps", "300"], CMD)[0] is None
    assert spec(["--to-end"], CMD)[0] is None
    assert spec(["--repeats", "2"], CMD)[0] is None  # its processes fixed: to its end, twice


def test_a_recipe_keeps_its_steps_unless_asked():
    assert spec([])[0] is None
    assert spec(["--until-known", "--margin", "5"])[0]["margin"] == 0.05
    assert spec(["--budget", "5m"])[0]["budget_s"] == 300.0  # --budget alone means --until-known


def test_a_sweeps_budget_alone_still_shares_its_time():
    assert spec(["--budget", "10m"], sweep=True)[0] is None
    got, _ = spec(["--budget", "10m", "--until-known"], sweep=True)
    assert got["budget_s"] == 600.0


@pytest.mark.parametrize("argv, command, says", [
    (["--until-known", "--steps", "100"], None, "leave --steps"),
    (["--budget", "5m", "--duration", "60"], CMD, "leave --steps"),
    (["--until-known", "--repeats", "3"], None, "--repeats would fix"),
    (["--margin", "5", "--steps", "100"], None, "--margin is --until-known's"),
    (["--to-end"], None, "--to-end runs a script"),
    (["--to-end", "--until-known"], CMD, "--to-end runs a script"),
])
def test_flags_that_contradict_it_are_one_line(argv, command, says):
    with pytest.raises(UsageError, match=says.replace("-", r"\-")):
        spec(argv, command)


def test_margin_and_budget_are_bounded():
    with pytest.raises(UsageError, match="between 0.1 and 50 %"):
        run_parser().parse_args(["--margin", "0"])
    with pytest.raises(UsageError, match="--budget"):
        run_parser().parse_args(["--budget", "5"])


def test_try_with_a_budget_drops_the_tried_sessions_until_known():
    """tuimon try --budget gives the try session a --duration: the original's --until-known and
    --margin would contradict it."""
    assert strip(["--until-known", "--margin", "5", "--modes", "eager"], LENGTH) == ["--modes", "eager"]


def test_try_until_known_races_the_fixes_in_rounds_with_its_budget_as_the_cap():
    from argparse import Namespace
    from pathlib import Path

    from test_try_cli import Plan

    from tuimon.analysis import RunStats

    meta = {"argv": ["tuimon", "run", "--repeats", "1", "--steps", "50", "--", "python", "t.py"]}
    base = RunStats("default-script", "default", "script")
    argv = rebuild(meta, Plan(base), ["none", "regional"], Path("/o"),
                   Namespace(budget=300.0, headless=True, until_known=True))
    assert "--repeats" not in argv and "--steps" not in argv and "--duration" not in argv
    assert argv[argv.index("--until-known") + 1:argv.index("--until-known") + 3] == ["--budget", "300.0"]
    assert argv[-3:] == ["--", "python", "t.py"]
