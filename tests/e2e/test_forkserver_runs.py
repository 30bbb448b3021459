"""The fork server: recipe runners forked with torch imported once (control/forkserver.py,
runner/forkserver.py). A forked runner must be indistinguishable from a spawned one to
everything that reads it: its events, losses, exit code or signal, log, process group, compile
cache, and its end when the supervisor dies.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from unittest import mock

import psutil
import pytest
from conftest import RECIPES, TEST_RECIPES, wait_for

from tuimon.control.child import Child
from tuimon.control.forkserver import ForkServer
from tuimon.settings import RunSettings

TINY = str(RECIPES / "tiny_mlp.py")


# pytest names the test under way in the environment, so a module's fork server would see every
# later test's runs as another environment (and rightly spawn them): each spawn names the same.
PYTEST_ENV = "PYTEST_CURRENT_TEST"


@pytest.fixture(scope="module")
def forks(tmp_path_factory):
    log = tmp_path_factory.mktemp("forks") / "forkserver.log"
    server = ForkServer({**os.environ, "PYTHONUNBUFFERED": "1"}, log)
    server.begin()
    server.pytest_env = os.environ.get(PYTEST_ENV)
    wait_for(lambda: server.ready_s is not None, 180, "the fork server's imports")
    yield server
    server.close()
    assert server._proc.returncode == 0, log.read_text()


class Run:
    """One runner through Child.spawn, as the supervisor starts it; its events collected."""

    def __init__(self, tmp_path: Path, forks: ForkServer | None, cache: Path | None = None,
                 **settings) -> None:
        self.events: list[dict] = []
        self.done = threading.Event()
        self.log = tmp_path / f"{settings['run']}.log"
        settings = {"device": "cpu", "threads": 1, "auto_profile": False, **settings}
        same = {PYTEST_ENV: forks.pytest_env} if forks and forks.pytest_env else {}
        with mock.patch.dict(os.environ, same):
            self.child = Child.spawn(RunSettings.make(**settings), cache=cache or tmp_path / "cache",
                                     log_path=self.log, deliver=self._deliver, forks=forks)

    def _deliver(self, run, batch):
        if batch is None:
            self.done.set()
        else:
            self.events += batch

    def of(self, kind: str) -> list[dict]:
        return [e for e in self.events if e["type"] == kind]

    def end(self, timeout: float = 300) -> int:
        assert self.done.wait(timeout), self.log.read_text()[-2000:]
        return self.child.reap()


def test_a_forked_runner_steps_as_a_spawned_one(forks, tmp_path):
    seed = {"recipe": TINY, "mode": "eager", "steps": 8, "seed": 3}
    forked = Run(tmp_path, forks, run="forked", **seed)
    assert forked.end() == 0
    spawned = Run(tmp_path, None, run="spawned", **seed)
    assert spawned.end() == 0
    (started,) = forked.of("run_started")
    assert started["pid"] == forked.child.proc.pid and started["preloaded_s"] == forks.ready_s
    assert "preloaded_s" not in spawned.of("run_started")[0]
    for run in (forked, spawned):
        assert [s["i"] for s in run.of("step")] == list(range(8))
        assert run.of("finished")[0]["reason"] == "steps"
    assert [s["loss"] for s in forked.of("step")] == [s["loss"] for s in spawned.of("step")]


def test_exit_codes_signals_and_logs_come_back(forks, tmp_path):
    hard = Run(tmp_path, forks, run="hard", recipe=str(TEST_RECIPES / "hard_exit.py"), mode="eager",
               steps=10)
    segv = Run(tmp_path, forks, run="segv", recipe=str(TEST_RECIPES / "fail_how.py"), mode="eager",
               steps=10, knobs=(("how", "segv"),))
    slow = Run(tmp_path, forks, run="slow", recipe=str(TEST_RECIPES / "slow_steps.py"),
               mode="eager", steps=100000, knobs=(("sleep_ms", "20"),))
    assert hard.end() == 7
    assert "about to die" in hard.log.read_text()
    assert segv.end() == -signal.SIGSEGV
    assert "Fatal Python error: Segmentation fault" in segv.log.read_text()
    wait_for(lambda: len(slow.of("step")) >= 3, 120, "the slow run's steps")
    assert os.getpgid(slow.child.proc.pid) == slow.child.proc.pid  # a group of its own
    slow.child.signal(signal.SIGKILL)  # as the stopper's last resort does: the whole group
    assert slow.end() == -signal.SIGKILL


def test_a_forked_compile_writes_its_own_cache(forks, tmp_path):
    # The fork server imported torch with another TORCHINDUCTOR_CACHE_DIR: torch reads it when
    # it compiles, so each run's own directory (a warm start's seed) is the one filled.
    cache = tmp_path / "own-cache"
    run = Run(tmp_path, forks, cache=cache, run="compiled", recipe=TINY, mode="default", steps=3)
    assert run.end() == 0, run.log.read_text()[-2000:]
    assert run.of("run_started")[0]["preloaded_s"]
    assert (cache / "fxgraph").is_dir() and any((cache / "fxgraph").rglob("*"))


HARNESS = """
import json, os, sys, threading, time
from pathlib import Path
from tuimon.control.child import Child
from tuimon.control.forkserver import ForkServer
from tuimon.settings import RunSettings
tmp = Path(sys.argv[1])
forks = ForkServer({**os.environ, "PYTHONUNBUFFERED": "1"}, tmp / "forkserver.log")
forks.begin()
while forks.ready_s is None:
    time.sleep(0.1)
stepping = threading.Event()
def deliver(run, batch):
    if batch and any(e["type"] == "phase" and e.get("phase") == "warmup" for e in batch):
        stepping.set()
child = Child.spawn(RunSettings.make(run="stuck", recipe=sys.argv[2], mode="eager", steps=5,
                    device="cpu", knobs=(("sleep_ms", "600000"),), auto_profile=False),
                    cache=tmp / "cache", log_path=tmp / "stuck.log", deliver=deliver, forks=forks)
stepped = stepping.wait(300)  # a loaded CI machine: the runner's first step may take a while
print(json.dumps({"runner": child.proc.pid, "forkserver": forks._proc.pid, "stepping": stepped}),
      flush=True)
time.sleep(600)
"""


# serial: in the parallel pass (3 of 3 full runs, 2026-11-29) the runner was gone within a second
# of the harness's death without a word in its log, beside the other worker's tests; alone, and
# beside two cores of CPU load, it passes every time (10 of 10). The cause is not found: the
# SIGPIPE default it once had is fixed (checked below), the rest is an open question.
@pytest.mark.serial
def test_a_killed_supervisor_ends_the_fork_server_and_its_runner(tmp_path):
    # The runner is stuck in a ten-minute step: its parent watch must notice the supervisor's
    # death although its parent is the fork server, and the fork server must not outlive both.
    harness = subprocess.Popen([sys.executable, "-c", HARNESS, str(tmp_path),
                                str(TEST_RECIPES / "slow_steps.py")],
                               stdout=subprocess.PIPE, text=True)
    try:
        pids = json.loads(harness.stdout.readline())
        # SIGPIPE ignored, as in every interpreter Python starts: a write to the gone
        # supervisor's pipe raises; with it at its default the runner died silently in CI
        ignored = int(next(line for line in Path(f"/proc/{pids['runner']}/status").read_text()
                           .splitlines() if line.startswith("SigIgn:")).split()[1], 16)
    finally:
        harness.kill()
        harness.wait()
    assert pids.pop("stepping"), "the runner never reached its warm-up within 300 s"
    assert ignored & (1 << (signal.SIGPIPE - 1))
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and any(alive(p) for p in pids.values()):
        time.sleep(0.2)
    assert not [name for name, pid in pids.items() if alive(pid)]
    log = (tmp_path / "stuck.log").read_text()
    forks_log = (tmp_path / "forkserver.log").read_text()
    assert "the supervisor (pid" in log and "is gone; stopping" in log, (log, forks_log[-2000:])


def alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def test_the_switch_makes_a_session_fork_its_later_runs(tuimon):
    args = (TINY, "--headless", "--modes", "eager", "--steps", "6", "--repeats", "2", "--no-probes")
    for env, forked in (({"TUIMON_FORKSERVER": "1"}, True), ({}, False)):
        proc, session = tuimon(*args, env=env)
        assert proc.returncode == 0, proc.stderr
        started = [e for e in map(json.loads, (session / "events.jsonl").open())
                   if e["type"] == "run_started"]
        # Round 2 starts once round 1 has ended, long after the fork server's imports: it forks.
        # (Round 1 started beside them: forked only if they were done first.)
        assert len(started) == 2 and ("preloaded_s" in started[1]) is forked
        assert forked or "preloaded_s" not in started[0]
        assert (session / "logs" / "forkserver.log").exists() is forked
