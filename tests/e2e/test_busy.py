"""Issue 14: turns sized in time, other processes' load seen and said, warnings that know the
schedule. Real sessions beside real busy processes (bounded in time, killed at the end)."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time

import psutil
import pytest
from conftest import RECIPES, TEST_RECIPES
from test_end_to_end import runs_of

from tests import fake_pynvml as fake
from tuimon.analysis.stats.load import BUSY_CORES
from tuimon.probes.gpu import GpuProbe
from tuimon.report.trust_text import busy_text
from tuimon.runner.turns import Turns

pytestmark = pytest.mark.serial  # judges load, or needs every core (tests/conftest.py)

NOISY = str(TEST_RECIPES / "noisy_turns.py")
# A burner: busy-loops on one core while PATH was touched in the last 0.1 s (PATH "-": always),
# for at most 120 s whatever happens to the test.
BURNER = """
import os, sys, time
path, end = sys.argv[1], time.time() + 120
while time.time() < end:
    if path == "-" or time.time() - os.stat(path).st_mtime < 0.1:
        t = time.perf_counter() + 0.05
        while time.perf_counter() < t:
            pass
    else:
        time.sleep(0.02)
"""


@contextlib.contextmanager
def burners(n: int, path: str = "-"):
    procs = [subprocess.Popen([sys.executable, "-c", BURNER, path]) for _ in range(n)]
    try:
        yield procs
    finally:
        for p in procs:
            p.kill()
            p.wait()


def test_turns_end_by_steps_by_time_and_never_hold_more_than_a_quarter():
    by_steps = Turns(steps_per_turn=5)
    by_steps.begin(0)
    assert [by_steps.over(i) for i in (1, 4, 5)] == [False, False, True]
    timed = Turns(seconds=0.05)
    timed.begin(10)
    assert not timed.over(10) and not timed.over(11)
    time.sleep(0.06)
    assert timed.over(11)
    timed.compiled()  # a step that compiled: the turn's clock starts again
    assert not timed.over(12)
    capped = Turns(seconds=3600, steps=20)  # 20 steps: 4 turns of 5 at least
    capped.begin(0)
    assert not capped.over(4) and capped.over(5)
    assert Turns(seconds=3.0, duration=2.0).seconds == 0.5  # a quarter of --duration
    assert not Turns().on


def test_turns_sized_in_time_alternate_many_times(tuimon):
    proc, session = tuimon(str(TEST_RECIPES / "slow_steps.py"), "--headless", "--modes", "eager",
                           "--precision", "fp32,amp", "--turn", "0.4", "--duration", "3",
                           "--set", "sleep_ms=10", "--no-probes")
    assert proc.returncode == 0, proc.stderr
    evs, runs = runs_of(session)
    order = [e["run"] for e in evs if e["type"] == "step"]
    blocks = [r for k, r in enumerate(order) if k == 0 or r != order[k - 1]]
    assert len(blocks) >= 8, blocks  # 4 turns each at least
    summary = json.loads((session / "summary.json").read_text())
    assert all(r["turns"] >= 4 for r in summary["runs"])
    started = next(e for e in evs if e["type"] == "session_started")
    assert started["schedule"] == "interleave" and started["turn_s"] == 0.4


def test_a_busy_machine_is_said(tuimon):
    with burners(1):
        time.sleep(0.5)
        proc, session = tuimon(NOISY, "--headless", "--modes", "eager", "--precision", "fp32,amp",
                               "--steps", "80", "--turn-steps", "20", "--set", "spin_ms=15",
                               "--interval", "0.2")
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((session / "summary.json").read_text())
    assert all(r["load"]["foreign_cores"] > BUSY_CORES for r in summary["runs"]), summary["runs"]
    assert summary["busy"].startswith("the machine was busy: other processes used ~")
    md = (session / "summary.md").read_text()
    assert "**Note: the machine was busy" in md and " — busy" in md
    assert "note: the machine was busy" in proc.stdout


def test_load_during_one_variants_turns_is_flagged_then_dropped_with_quiet_only(tuimon, tmp_path):
    """Two burners run while the compiled variant steps: all its turns (flagged unreliable,
    with the figures), then every other one with --quiet-only (those steps kept out)."""
    # On 2 cores the burners can only show beside the runner's own core: other load already
    # there would leave no room for the difference this test reads.
    background = psutil.cpu_percent(interval=1.0) / 100 * (os.cpu_count() or 1)
    if background > 0.5:
        pytest.skip(f"needs a quiet machine: {background:.1f} cores busy before the test")
    poke = tmp_path / "poke"
    poke.touch()
    os.utime(poke, (0, 0))
    args = [NOISY, "--headless", "--modes", "eager,default", "--steps", "200", "--turn-steps",
            "50", "--set", "spin_ms=15", "--set", f"poke={poke}", "--interval", "0.2"]
    with burners(2, str(poke)):
        proc, session = tuimon(*args)
        assert proc.returncode == 0, proc.stderr
        quiet_proc, quiet_session = tuimon(*args, "--set", "noisy_every=2", "--quiet-only")
        assert quiet_proc.returncode == 0, quiet_proc.stderr
    rows = {r["run"]: r for r in json.loads((session / "summary.json").read_text())["runs"]}
    quiet = {r["run"]: r for r in json.loads((quiet_session / "summary.json").read_text())["runs"]}
    eager, default = rows["eager-fp32"], rows["default-fp32"]
    # Eager pokes nothing: load during its steps came from outside the test (another job that
    # started after the check above), which leaves the test nothing to read.
    outside = [f"{eager['load']['foreign_cores']:.1f} cores during eager's steps"] if (
        eager["load"]["foreign_cores"] or 0.0) > 0.3 else []
    quiet_eager = quiet["eager-fp32"]
    if quiet_eager["load"]["busy_dropped"] > quiet_eager["timing"]["steps"] // 3:
        outside.append(f"{quiet_eager['load']['busy_dropped']} of eager's steps busy with --quiet-only")
    if outside:
        pytest.skip(f"needs a quiet machine: other processes used {', '.join(outside)}")
    assert default["load"]["foreign_cores"] - eager["load"]["foreign_cores"] > 0.5, (eager, default)
    assert default["load"]["load_differs"] and "during eager/fp32's steps" in default["words"]["unreliable"]
    assert "unreliable: other processes' load differed" in (session / "summary.md").read_text()
    assert "unreliable: default/fp32: other processes used" in proc.stdout
    # --quiet-only: the busy turns (every other one) are kept out, the rest compared.
    assert quiet["default-fp32"]["load"]["busy_dropped"] >= 40
    assert not quiet["default-fp32"]["load"]["load_differs"]
    speedup = quiet["default-fp32"]["compare"]["speedup"]
    assert speedup is not None, quiet  # quiet steps were left to compare
    assert 0.85 < speedup < 1.15  # the same spin: no speedup
    assert "steps kept out (--quiet-only)" in (quiet_session / "summary.md").read_text()


def test_a_quiet_default_session_warns_of_nothing(tuimon):
    proc, session = tuimon(str(RECIPES / "tiny_mlp.py"), "--headless", "--modes", "eager,default",
                           "--steps", "300", "--interval", "0.2")
    assert proc.returncode == 0, proc.stderr
    evs, _ = runs_of(session)
    warnings = [e["text"] for e in evs if e["type"] == "warning" and not e.get("note")]
    assert not [w for w in warnings if "share" in w or "busy" in w], warnings


def test_a_foreign_gpu_process_is_seen_on_the_runs_device():
    """NVML lists a process on the run's GPU that is none of the runs': its pid, memory, SM %."""
    now_us = int(time.time() * 1e6)
    nv = fake.make([fake.FakeDevice(procs=[(100, 2**30), (4242, 3 * 2**30)],
                                    util_samples=[(100, now_us, 40, 10), (4242, now_us, 35, 5)])])
    with GpuProbe(nv) as probe:
        sample = probe.sample({"eager-fp32": [100]})
    foreign = sample["devices"][0]["foreign"]
    assert foreign == {"pids": [4242], "gpu_mem": 3 * 2**30, "sm_util": 35}
    assert sample["runs"]["eager-fp32"]["gpu_mem"] == 2**30


def test_a_foreign_gpu_process_makes_the_session_busy_and_names_it():
    """The same rules on a GPU box, from samples a fake NVML's probe would give: another process
    at 35 % SM on the runs' GPU while both stepped."""
    from test_stats import run_events

    from tuimon import events
    from tuimon.analysis.stats import summarize

    evs = run_events("eager-fp32", "eager", "fp32", [10.0] * 40)
    evs += run_events("default-fp32", "default", "fp32", [8.0] * 40)
    device = {"index": 0, "util_gpu": 90, "foreign": {"pids": [4242], "gpu_mem": 2**30, "sm_util": 35}}
    for k in range(40):
        evs.append(events.make(events.SAMPLE, system={"foreign_cores": 0.05}, devices=[device],
                               runs={run: {"cpu_percent": 100.0, "gpus": [0]}
                                     for run in ("eager-fp32", "default-fp32")}))
        evs[-1]["t"] = 1000.0 + k
    summary = summarize(evs)
    assert busy_text(summary.busy) == ("the machine was busy: other processes used ~0.1 cores (GPU: pid 4242 "
                            "at 35 %) while these steps ran; times are slower than on a quiet machine")
    assert all(r.load.foreign_gpu_pids == [4242] for r in summary.runs)
