"""The real runs of tests/unit/test_compare.py: the CLI in a child process, real scripts and compiles.
The pure tests of the same feature stay in tests/unit/test_compare.py."""

from __future__ import annotations

import json
import shutil

from conftest import SCRIPTS
from test_compare import PY, SLOW


def session_pair_args(sleep_ms: int, modes: str = "eager,default") -> tuple:
    return (SLOW, "--headless", "--modes", modes, "--steps", "30", "--warmup", "2", "--set",
            f"sleep_ms={sleep_ms}", "--no-auto-capture")


def compare(tuimon, *args):
    proc, _ = tuimon("compare", *map(str, args))
    return proc


# ---- real sessions ----------------------------------------------------------------------------
def test_identical_sessions_pass_the_guard_and_a_slower_one_fails_it(tuimon, tmp_path):
    runs = []
    for sleep_ms, modes in ((20, "eager,default"), (20, "eager,default"), (120, "eager")):
        proc, session = tuimon(*session_pair_args(sleep_ms, modes))
        assert proc.returncode == 0, proc.stderr
        runs.append(session)
    a, b, slow = runs

    # The same recording (a copy): nothing changed, and the guard judges nothing (issue 33.11:
    # a session compared with itself said "cannot tell", exit 4).
    twin = shutil.copytree(a, tmp_path / "twin")
    same = compare(tuimon, a, twin, "--format", "json", "--fail-if-slower", "0",
                   "--fail-if-compile-slower", "0")
    assert same.returncode == 0, same.stderr
    doc = json.loads(same.stdout)
    assert doc["differences"] == [] and not doc["guard"]["failed"] and not doc["guard"]["cannot_tell"]
    assert any("B is the same recording as A" in n for n in doc["notes"])
    # Two sessions of the same work: the guard never fails them on noise; it passes a threshold
    # beyond what they can tell, and cannot tell a smaller one (exit 4).
    tight = compare(tuimon, a, b, "--fail-if-slower", "0")
    assert tight.returncode == 4, tight.stdout + tight.stderr
    assert "cannot tell whether the median step got more than 0 % slower" in tight.stderr
    wide = compare(tuimon, a, b, "--fail-if-slower", "10000")
    assert wide.returncode == 0, wide.stderr
    assert [v["label"] for v in doc["variants"]] == ["eager/fp32", "default/fp32"]
    for v in doc["variants"]:
        assert v["median_change"][1]["ratio"] == 1.0 and v["median_change"][1]["significant"] is False

    # Two runs of the same thing: matched variant by variant, every figure beside its change.
    # (Not asserted: that their medians agree; other engineers' compiles load this machine.)
    again = compare(tuimon, a, b, "--format", "json")
    assert again.returncode == 0, again.stdout + again.stderr
    doc = json.loads(again.stdout)
    assert [v["label"] for v in doc["variants"]] == ["eager/fp32", "default/fp32"]
    default = doc["variants"][1]
    assert default["compile_s"][0] > 0 and default["compile_change"][1] is not None
    assert default["median_change"][1]["lo"] < default["median_change"][1]["ratio"]
    names = [m["name"] for m in default["metrics"]]
    assert {"compile time", "graphs / breaks / recompiles", "peak RSS", "loss vs A, same steps",
            "other processes while it stepped"} <= set(names)
    assert not any(d["what"].startswith("recipe knobs") for d in doc["differences"])

    # Six times the sleep: slower beyond noise, the guard fails with exit 1 and says why on stderr.
    slower = compare(tuimon, a, slow, "--format", "md", "--fail-if-slower", "20")
    assert slower.returncode == 1, slower.stdout + slower.stderr
    md = slower.stdout
    differs = md.split("## What differs")[1].split("## Changes")[0]
    assert "| recipe knobs (cfg.extra) | sleep_ms=20 | sleep_ms=120 |" in differs  # named first
    assert "| --set | sleep_ms=20 | sleep_ms=120 |" in differs
    assert "eager/fp32, B vs A: median step +" in md and ", slower" in md
    assert "default/fp32: only in A" in md  # B ran eager only
    assert "Guard: FAILED" in md
    line = slower.stderr.strip().splitlines()
    assert len(line) == 1 and "eager/fp32 in B vs A" in line[0] and "median step +" in line[0]
    assert "more than --fail-if-slower 20 %" in line[0]
    # The default output: rich tables, the guard's verdict among them.
    table = compare(tuimon, a, slow, "--fail-if-slower", "20")
    assert table.returncode == 1 and "What differs" in table.stdout and "guard failed" in table.stdout


def test_script_sessions_compare_too(tuimon):
    sessions = []
    for item_ms in ("0.05", "3"):
        proc, session = tuimon("run", "--headless", "--modes", "eager", "--steps", "25", "--no-auto-capture",
                               "--", PY, str(SCRIPTS / "slow_data.py"), "--item-ms", item_ms)
        assert proc.returncode == 0, proc.stderr
        sessions.append(session)
    proc = compare(tuimon, *sessions, "--format", "md", "--fail-if-slower", "50")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "| command |" in proc.stdout and "--item-ms 0.05" in proc.stdout and "--item-ms 3" in proc.stdout
    assert "### eager/script" in proc.stdout
