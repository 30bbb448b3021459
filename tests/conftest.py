"""Shared fixtures: run the real CLI in a subprocess, with one warm Inductor cache per test run.

The first compiled run of the suite pays the cold compile (~10 s on 2 cores); the rest reuse
the cache, so the suite stays fast while every compile is a real torch.compile.

The tests stand in three tiers, one folder each, marked by their folder: unit/ (pure: synthetic
sessions and fakes, `make test-fast`), e2e/ (real processes, real compiles), ui/ (Pilot and
snapshots). Helpers here and in tests/ (synthetic_session.py, browser.py, fake_pynvml.py) are
imported by name from every tier, and so are the helpers a test module shares with another.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

ROOT = Path(__file__).resolve().parent.parent
TIERS = ("unit", "e2e", "ui")
# A test module imports another's helpers by name (`from test_stats import run_events`), across
# tiers too: every tier's folder is on the path before any module is collected.
for _tier in TIERS:
    sys.path.insert(0, str(Path(__file__).resolve().parent / _tier))
RECIPES = ROOT / "recipes"
TEST_RECIPES = Path(__file__).resolve().parent / "recipes"
SCRIPTS = Path(__file__).resolve().parent / "scripts"  # training scripts that know nothing of tuimon


def pytest_configure(config):
    """Under pytest-xdist (`make test`: `-n 2`), each worker gets its own share of the cores: the
    sessions a test starts inherit it, and judge a noisy neighbour on those cores only
    (probes/host.py), so the other worker's tests are not one. Tests that judge load, or need
    every core, are marked ``serial`` and run after, alone."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    count = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT") or 0)
    cores = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    if worker and count > 1 and len(cores) >= count:
        n = int(worker.removeprefix("gw"))
        os.sched_setaffinity(0, cores[n * len(cores) // count:(n + 1) * len(cores) // count])


def pytest_collection_modifyitems(config, items):
    """Mark each test with its tier, from its folder: `-m unit`, `-m "not e2e"`."""
    tests = Path(__file__).resolve().parent
    for item in items:
        parts = Path(str(item.path)).resolve().relative_to(tests).parts
        if parts and parts[0] in TIERS:
            item.add_marker(getattr(pytest.mark, parts[0]))


@pytest.fixture(scope="session", autouse=True)
def peak_cache(tmp_path_factory) -> Path:
    """The measured GEMM peaks (runner/peak_bench.py) in the test session's own file, in a
    directory of its own: measured once by the first run that counts FLOPs, never the user's."""
    from tuimon.envvars import PEAK_CACHE

    path = tmp_path_factory.mktemp("peaks") / "peaks.json"
    os.environ[PEAK_CACHE] = str(path)
    return path


@pytest.fixture(scope="session")
def inductor_cache(tmp_path_factory) -> Path:
    """One warm cache for every test: TUIMON_TEST_INDUCTOR_CACHE (`make test` shares one between
    its parallel and its serial pass), else the xdist workers' shared temp root, else this
    session's (Inductor writes its entries atomically and locks its C++ builds)."""
    if os.environ.get("TUIMON_TEST_INDUCTOR_CACHE"):
        path = Path(os.environ["TUIMON_TEST_INDUCTOR_CACHE"])
        path.mkdir(parents=True, exist_ok=True)
        return path
    if os.environ.get("PYTEST_XDIST_WORKER"):
        path = tmp_path_factory.getbasetemp().parent / "inductor-cache"
        path.mkdir(exist_ok=True)
        return path
    return tmp_path_factory.mktemp("inductor-cache")


@pytest.fixture
def tuimon(tmp_path, inductor_cache):
    """Run ``tuimon ARGS`` as a user would; returns (CompletedProcess, session dir or None)."""

    def run(*args: str, cache: bool = True, timeout: float = 300, env: dict | None = None,
            cwd: Path | None = None, one_process: bool = True, **kwargs):
        out = tmp_path / "sessions"
        # tuimon's options go before a script's command (`tuimon run [options] -- CMD ...`)
        ours, theirs = (args, ()) if "--" not in args else (args[:args.index("--")],
                                                           args[args.index("--"):])
        cmd = [sys.executable, "-m", "tuimon", *ours]
        command = args[0] if args and args[0] in ("summary", "replay", "attach", "ls", "compare",
                                                          "try", "report", "export") else "run"
        if "--out" not in ours and command in ("run", "attach", "ls"):
            cmd += ["--out", str(out)]
        if cache and command == "run":
            cmd += ["--cache-dir", str(inductor_cache)]
        if command == "run" and "--repeats" not in ours and one_process:
            # One process a variant unless a test asks for more: the suite tests features, not
            # the default's several processes (test_noise.py does), and stays within its time.
            cmd += ["--repeats", "1"]
        cmd += theirs
        env = {**os.environ, "COLUMNS": "200", **(env or {})}
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env,
                              cwd=cwd or tmp_path, **kwargs)
        sessions = sorted(out.glob("*")) if out.exists() else []
        if sessions and command == "run":
            check_anatomy(sessions[-1])
        return proc, (sessions[-1] if sessions else None)

    return run


def check_anatomy(session: Path) -> None:
    """Every script session's reading of its loop (the anatomy event, issue 40) agrees with
    what its runs recorded: as many steps as step events, each counted once in the backward()
    histogram, the lead optimizer stepping once a step (one training, steps ended by step()),
    every optimizer's module named or said not found. Asserted for every script test that runs
    a session through this fixture."""
    store = session / "events.jsonl"
    if not store.exists():
        return
    evs = [json.loads(line) for line in store.read_text().splitlines() if line.strip()]
    steps: dict[str, int] = {}
    for e in evs:
        if e["type"] == "step" and "rank" not in e:
            steps[e["run"]] = steps.get(e["run"], 0) + 1
    last = {e["run"]: e for e in evs if e["type"] == "anatomy" and "rank" not in e}
    for run, a in last.items():
        if not any(e["type"] == "finished" and e.get("run") == run for e in evs):
            continue  # failed or killed: its last reading is its first steps'
        assert a["steps"] == steps.get(run, 0), (run, a["steps"], steps.get(run))
        assert sum(a["backwards"].values()) == a["steps"] == sum(a["loss_sums"].values()), (run, a)
        lead = [o for o in a["optimizers"] if o["lead"]]
        if a["ends_at"] == "optimizer.step" and a["lead_changes"] == 1 and lead:
            assert lead[0]["steps"] >= a["steps"], (run, a)  # a skipped scaler step is a step too
        assert all(o["compiled"] for o in a["optimizers"]), (run, a)


@pytest.fixture
def reaper(tmp_path):
    """Session daemons a failing test left running under tmp_path: killed by pid at teardown
    (with their runners), so a detached run does not outlive its test."""
    yield
    for proc in psutil.process_iter(["pid", "cmdline"]):
        cmd = " ".join(proc.info["cmdline"] or [])
        if "tuimon.control.daemon" in cmd and str(tmp_path) in cmd:
            with contextlib.suppress(psutil.Error):
                for child in proc.children(recursive=True):
                    child.kill()
                proc.kill()


def runner_events(cache: Path, timeout: float = 400, **settings) -> tuple[int, list[dict]]:
    """One recipe run as the supervisor starts it (``python -m tuimon.runner`` with its
    RunSettings, made flat from ``settings``, its events on a pipe): (exit code, its events)."""
    from tuimon.settings import RunSettings

    event_r, event_w = os.pipe()
    env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": str(cache),
           **RunSettings.make(event_fd=event_w, **settings).environ()}
    proc = subprocess.Popen([sys.executable, "-m", "tuimon.runner"], pass_fds=(event_w,), env=env,
                            stdout=subprocess.DEVNULL)
    os.close(event_w)
    with os.fdopen(event_r, "rb") as f:
        got = [json.loads(line) for line in f]
    return proc.wait(timeout=timeout), got


def wait_for(predicate, timeout: float = 30.0, what: str = ""):
    """Poll ``predicate`` until it returns something true (returned), or fail after ``timeout``."""
    deadline = time.monotonic() + timeout
    while not (value := predicate()):
        assert time.monotonic() < deadline, f"timed out waiting for {what or predicate}"
        time.sleep(0.05)
    return value


async def until(app, pilot, predicate, timeout: float = 60.0, what: str = "") -> None:
    """Drive a TUI's redraw tick until ``predicate()`` holds (a Pilot test of a live session)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        await pilot.pause(0.2)
        app.tick()
        if predicate():
            return
    raise AssertionError(f"timed out waiting for {what}")
