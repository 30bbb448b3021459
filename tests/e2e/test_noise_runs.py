"""The real runs of tests/unit/test_noise.py: the CLI in a child process, real scripts and compiles.
The pure tests of the same feature stay in tests/unit/test_noise.py."""

from __future__ import annotations

import json

import pytest
from conftest import RECIPES
from test_compare import fake_session

pytestmark = pytest.mark.serial  # judges load, or needs every core (tests/conftest.py)


def test_compare_exit_codes_pass_fail_and_cannot_tell(tuimon, tmp_path):
    def repeats(name: str, medians: list[float]) -> str:
        runs = {f"eager-fp32-{k}": ("eager", "fp32", {}, [m] * 60) for k, m in enumerate(medians, 1)}
        return str(fake_session(tmp_path / name, runs, replicate={run: k for k, run in enumerate(runs, 1)}))

    a = repeats("a", [10.0, 10.4, 9.7])
    same = repeats("same", [10.2, 9.8, 10.1])
    slower = repeats("slower", [14.1, 13.8, 14.5])
    proc, _ = tuimon("compare", a, same, "--fail-if-slower", "5", "--session-spread", "0")
    assert proc.returncode == 4, proc.stdout + proc.stderr  # cannot tell 5 % with this spread
    assert "cannot tell whether the median step got more than 5 % slower" in proc.stderr
    assert "processes a side would tell 5 %" in proc.stderr and "--repeats" in proc.stderr
    # With a session's own level (5 % by default) no number of processes tells 5 % between two
    # sessions: the advice is one session.
    proc, _ = tuimon("compare", a, same, "--fail-if-slower", "5")
    assert proc.returncode == 4, proc.stdout + proc.stderr
    assert "between two sessions no number of processes tells 5 %" in proc.stderr
    assert "race both in one session" in proc.stderr
    proc, _ = tuimon("compare", a, same, "--fail-if-slower", "50")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    proc, _ = tuimon("compare", a, slower, "--fail-if-slower", "5")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "median step +40" in proc.stderr


def test_the_default_runs_three_processes_a_variant_round_one_whole(tuimon):
    """Issue 33.7: round 1 runs all the --steps asked for (whatever comes late in a script is
    reached), rounds 2 and 3 a third each, for the spread between processes."""
    proc, session = tuimon(str(RECIPES / "tiny_mlp.py"), "--headless", "--modes", "eager", "--steps", "60",
                           "--warmup", "2", "--no-auto-capture", one_process=False)
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((session / "summary.json").read_text())
    assert json.loads((session / "meta.json").read_text())["settings"]["repeats"] == 3
    assert [r["timing"]["steps"] for r in summary["runs"]] == [60, 20, 20]
    assert summary["variants"][0]["timing"]["steps"] == 100
    md = (session / "summary.md").read_text()
    # "(60 steps) ·", or "(60 steps) — left out: …" when a round met other processes' load
    assert "| median step per process |" in md and "(60 steps) " in md and "(20 steps)" in md
    # A round that met other processes' load (lingering compile workers of an earlier test, in
    # the full suite) is left out of the spread, with its reason; the three processes still ran.
    left_out = summary["variants"][0]["left_out"]
    assert all(p.get("why") for p in left_out) and len(left_out) <= 1, left_out
    assert summary["noise"]["measured"] and summary["noise"]["processes"] == 3 - len(left_out)
