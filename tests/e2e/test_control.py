"""Controlling live runs: the runner's control channel and the supervisor's thread-safe API.

Real runner children on CPU (the slow_steps recipe, eager: no compile), a Supervisor run with
keep_open=True on a thread of the test, driven from the test's thread as a TUI would.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time

import psutil
import pytest
from conftest import TEST_RECIPES

from tuimon import events
from tuimon.analysis.stats import summarize
from tuimon.control.supervisor import Plan, Supervisor
from tuimon.runner.control_lines import EOF, ControlLines
from tuimon.sessiondir import store
from tuimon.sessiondir.store import SessionStore
from tuimon.settings import RunSettings
from tuimon.variants import Variant

SLOW = TEST_RECIPES / "slow_steps.py"
FP32, AMP = Variant("eager", "fp32"), Variant("eager", "amp")


def no_children_left(timeout: float = 5.0) -> list:
    deadline = time.monotonic() + timeout
    while (left := psutil.Process().children(recursive=True)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


class Live:
    """A kept-open session on a thread; ``events`` is what the sink got, in order."""

    def __init__(self, path, variants, schedule="sequential", sleep_ms=20, steps=100000,
                 interval=None, stop_line_s=3.0):
        self.store = SessionStore.create(path, "control")
        self.events: list[dict] = []
        settings = RunSettings.make(recipe=str(SLOW), device="cpu", warmup="0", steps=steps,
                                    knobs=(("sleep_ms", str(sleep_ms)),))
        plan = Plan(settings, variants, schedule, interval=interval, stop_line_s=stop_line_s)
        self.sup = Supervisor(self.store, plan, self.events.extend)
        self.status: list[str] = []
        self.thread = threading.Thread(target=lambda: self.status.append(self.sup.run(keep_open=True)))
        self.thread.start()

    def of(self, run: str, kind: str) -> list[dict]:
        return [e for e in list(self.events) if e.get("run") == run and e["type"] == kind]

    def wait(self, what, timeout: float = 30.0, why: str = ""):
        deadline = time.monotonic() + timeout
        while not (value := what()):
            assert time.monotonic() < deadline, f"timed out waiting for {why or what}"
            time.sleep(0.02)
        return value

    def wait_steps(self, run: str, n: int) -> list[dict]:
        return self.wait(lambda: len(s := self.of(run, events.STEP)) >= n and s, why=f"{n} steps of {run}")

    def wait_state(self, run: str, state: str) -> None:
        self.wait(lambda: self.sup.states().get(run) == state, why=f"{run} {state}")

    def close(self) -> str:
        self.sup.close()
        self.thread.join(30)
        assert not self.thread.is_alive()
        self.store.close()
        return self.status[0]


@pytest.fixture
def live(tmp_path):
    sessions: list[Live] = []

    def start(*args, **kwargs) -> Live:
        sessions.append(Live(tmp_path, *args, **kwargs))
        return sessions[-1]

    yield start
    for s in sessions:
        if s.thread.is_alive():
            s.close()
    assert no_children_left() == []


def contiguous(steps: list[dict]) -> bool:
    return [s["i"] for s in steps] == list(range(len(steps)))


# ---- the runner's side ------------------------------------------------------------------------
def test_control_check_costs_microseconds():
    r, w = os.pipe()
    try:
        control = ControlLines(r)
        n = 20000
        t0 = time.perf_counter()
        for _ in range(n):
            control.poll()
        per_poll_us = (time.perf_counter() - t0) / n * 1e6
        assert per_poll_us < 20, per_poll_us
        print(f"\ncontrol poll, nothing sent: {per_poll_us:.2f} µs")
        # Lines may arrive split and several at once; blanks and whitespace are dropped.
        os.write(w, b"pause\nres")
        assert control.poll() == "pause" and control.poll() is None
        os.write(w, b"ume\n\n stop \n")
        assert [control.poll(), control.poll(), control.poll()] == ["resume", "stop", None]
        # wait() blocks until a line comes.
        threading.Timer(0.2, os.write, (w, b"resume\n")).start()
        t0 = time.monotonic()
        assert control.wait() == "resume" and time.monotonic() - t0 >= 0.15
    finally:
        os.close(w)
    assert control.poll() == EOF and control.fd is None  # the parent is gone
    assert ControlLines(None).poll() is None and ControlLines(None).wait() == EOF


def spawn_runner(**settings):
    """``python -m tuimon.runner`` as the supervisor starts it: its settings in its environment."""
    event_r, event_w = os.pipe()
    control_r, control_w = os.pipe()
    settings = RunSettings.make(recipe=str(SLOW), run="r", device="cpu", warmup="0",
                                event_fd=event_w, control_fd=control_r, **settings)
    proc = subprocess.Popen([sys.executable, "-m", "tuimon.runner"], pass_fds=(event_w, control_r),
                            stdout=subprocess.DEVNULL, env={**os.environ, **settings.environ()})
    os.close(event_w)
    os.close(control_r)
    got: list[dict] = []

    def read():
        with os.fdopen(event_r, "rb") as f:
            got.extend(json.loads(line) for line in f)

    reader = threading.Thread(target=read)
    reader.start()
    return proc, control_w, got, reader


def wait_for(predicate, timeout=30.0):
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline
        time.sleep(0.02)


def test_runner_duration_does_not_count_paused_time_and_eof_means_stop():
    proc, control, got, reader = spawn_runner(duration=1.5, knobs=(("sleep_ms", "20"),))
    wait_for(lambda: any(e["type"] == "step" for e in got))
    os.write(control, b"pause\n")
    wait_for(lambda: any(e.get("phase") == "paused" for e in got))
    time.sleep(1.5)  # as long as the whole limit: the run must still be there afterwards
    os.write(control, b"resume\n")
    assert proc.wait(30) == 0
    reader.join()
    finished = next(e for e in got if e["type"] == "finished")
    assert finished["reason"] == "duration" and finished["paused_s"] >= 1.4
    assert finished["seconds"] - finished["paused_s"] == pytest.approx(1.5, abs=0.3)
    os.close(control)

    # The parent closing its end (dying) stops a running runner at a step boundary.
    proc, control, got, reader = spawn_runner(steps=100000, knobs=(("sleep_ms", "20"),))
    wait_for(lambda: any(e["type"] == "step" for e in got))
    os.close(control)
    assert proc.wait(30) == 0
    reader.join()
    assert next(e for e in got if e["type"] == "finished")["reason"] == "stopped"


# ---- the supervisor's API -----------------------------------------------------------------
def test_pause_stops_steps_and_resume_restarts_them(live):
    s = live([FP32], interval=0.2)
    run = "eager-fp32"
    s.wait_steps(run, 10)
    s.sup.pause(run)
    s.wait_state(run, "paused")
    paused = next(e for e in s.of(run, events.PHASE) if e["phase"] == "paused")
    before = len(s.of(run, events.STEP))
    time.sleep(1.0)
    assert len(s.of(run, events.STEP)) == before  # nothing while paused
    assert all(e["t"] <= paused["t"] for e in s.of(run, events.STEP))  # flushed before it said so
    s.sup.resume(run)
    s.wait_state(run, "running")
    s.wait_steps(run, before + 10)
    s.sup.stop(run)
    s.wait_state(run, "stopped")
    assert s.close() == "done"

    steps = s.of(run, events.STEP)
    assert contiguous(steps)
    # The pause fell between two steps: no step time carries any of its second.
    assert max(e["ms"] for e in steps) < 400, max(e["ms"] for e in steps)
    assert steps[before]["t"] - steps[before - 1]["t"] >= 1.0
    phases = [e["phase"] for e in s.of(run, events.PHASE)]
    assert phases[-2:] == ["paused", "steady"]  # resumed into the phase it had
    assert s.of(run, events.FINISHED)[0]["reason"] == "stopped"
    assert s.of(run, events.FINISHED)[0]["paused_s"] >= 1.0
    # The store has what the user did, in order, and the summary knows the pause.
    evs, bad = store.read_events(s.store.path)
    assert bad == 0
    assert [e["action"] for e in evs if e["type"] == events.CONTROL] == ["pause", "resume", "stop", "close"]
    r = summarize(evs).runs[0]
    assert r.status == "stopped" and r.paused_s >= 1.0 and r.timing.steps == len(steps)


def test_stop_ends_one_run_while_its_sibling_goes_on(live):
    s = live([FP32, AMP], schedule="parallel")
    s.wait_steps("eager-fp32", 5)
    s.wait_steps("eager-amp", 5)
    half = max(1, len(os.sched_getaffinity(0)) // 2)  # of the cores it may use (tuimon/cores.py)
    assert {e["threads"] for e in s.of("eager-amp", events.RUN_STARTED)} == {half}
    s.sup.stop("eager-fp32")
    s.wait_state("eager-fp32", "stopped")
    at_stop = len(s.of("eager-amp", events.STEP))
    s.wait_steps("eager-amp", at_stop + 10)
    assert s.sup.states() == {"eager-fp32": "stopped", "eager-amp": "running"}
    assert s.of("eager-fp32", events.FINISHED)[0]["reason"] == "stopped"
    exited = s.wait(lambda: s.of("eager-fp32", events.RUN_EXITED), why="the exit")
    assert exited[0]["returncode"] == 0  # a clean exit at a step boundary, no signal
    assert contiguous(s.of("eager-fp32", events.STEP))
    s.close()


@pytest.mark.parametrize("sigint", ["default", "ignored"])
def test_a_step_that_outlasts_the_stop_line_gets_sigint_then_a_run_still_building_is_killed(
        live, sigint):
    if sigint == "ignored":  # tuimon started by a shell in the background (`&`, nohup, CI):
        # its children inherit SIGINT ignored, and must still hear the stop's SIGINT.
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        _outlasting_step(live)
    finally:
        if sigint == "ignored":
            signal.signal(signal.SIGINT, previous)


def _outlasting_step(live):
    s = live([FP32], sleep_ms=5000, stop_line_s=0.3)
    s.wait(lambda: s.of("eager-fp32", events.RUN_STARTED), why="run_started")
    s.sup.stop("eager-fp32")
    asked = time.monotonic()
    s.wait_state("eager-fp32", "stopped")
    assert time.monotonic() - asked < 3.0  # not the 5 s of the step
    finished = s.of("eager-fp32", events.FINISHED)[0]
    assert finished["reason"] == "stopped" and "forced" not in finished  # the runner said it
    assert s.wait(lambda: s.of("eager-fp32", events.RUN_EXITED))[0]["returncode"] == 0
    # Building: nothing measured yet, so no waiting for a step boundary.
    building = s.sup.add(AMP)
    s.wait(lambda: s.of(building, events.PHASE), why="building")
    s.sup.stop(building)
    s.wait_state(building, "stopped")
    assert s.of(building, events.FINISHED)[0]["forced"] == "killed by SIGKILL"
    assert s.close() == "done"  # a stop is not a failure


def test_restart_with_a_new_variant_keeps_the_old_run(live):
    s = live([FP32])
    s.wait_steps("eager-fp32", 5)
    new = s.sup.restart("eager-fp32", AMP)
    assert new == "eager-amp"
    s.wait_steps(new, 3)
    again = s.sup.restart(new)  # same variant: a fresh id
    assert again == "eager-amp-2"
    s.wait_steps(again, 3)
    states = s.sup.states()
    assert states == {"eager-fp32": "stopped", "eager-amp": "stopped", "eager-amp-2": "running"}
    queued = {e["run"]: e for e in s.events if e["type"] == events.RUN_QUEUED}
    assert "replaces" not in queued["eager-fp32"]
    assert queued["eager-amp"]["replaces"] == "eager-fp32" and queued["eager-amp"]["precision"] == "amp"
    assert queued["eager-amp-2"]["replaces"] == "eager-amp"
    # The new process started only after the old one exited (sequential: the same slot).
    exited = s.of("eager-fp32", events.RUN_EXITED)[0]["t"]
    assert s.of("eager-amp", events.PHASE)[0]["t"] >= exited
    restart = next(e for e in s.events if e["type"] == events.CONTROL)
    assert (restart["run"], restart["action"], restart["new_run"]) == ("eager-fp32", "restart", "eager-amp")
    s.close()
    summary = summarize(store.read_events(s.store.path)[0])
    by_run = {r.run: r for r in summary.runs}
    assert list(by_run) == ["eager-fp32", "eager-amp", "eager-amp-2"]
    assert by_run["eager-fp32"].status == "stopped" and by_run["eager-fp32"].timing.steps >= 5
    assert (s.store.path / "logs" / "eager-amp-2.log").is_file()


def test_sequential_add_waits_for_the_slot_even_behind_a_paused_run(live):
    s = live([FP32])
    s.wait_steps("eager-fp32", 3)
    s.sup.pause("eager-fp32")
    s.wait_state("eager-fp32", "paused")
    added = s.sup.add(AMP)
    assert added == "eager-amp" and s.sup.states()[added] == "queued"
    time.sleep(1.0)
    assert s.sup.states()[added] == "queued" and not s.of(added, events.PHASE)
    s.sup.stop("eager-fp32")  # stopping a paused run frees the slot
    s.wait_state("eager-fp32", "stopped")
    s.wait_steps(added, 3)
    assert s.of(added, events.PHASE)[0]["t"] >= s.of("eager-fp32", events.RUN_EXITED)[0]["t"]
    assert s.sup.add(FP32) == "eager-fp32-2"  # the id of the first run is not reused
    s.close()


def test_kept_open_until_close_which_ends_everything(live):
    s = live([FP32], steps=15, sleep_ms=100)
    s.wait_state("eager-fp32", "done")
    time.sleep(0.5)
    assert s.thread.is_alive()  # keep_open: nothing runs, the session still takes commands
    paused = s.sup.add(AMP)
    s.wait_steps(paused, 1)
    s.sup.pause(paused)
    s.wait_state(paused, "paused")
    queued = s.sup.add(FP32, replaces="eager-fp32")
    pids = {e["pid"] for e in s.of(paused, events.RUN_STARTED)}
    assert s.close() == "done"
    assert s.sup.states() == {"eager-fp32": "done", "eager-amp": "stopped", "eager-fp32-2": "stopped"}
    assert no_children_left() == []
    assert not any(psutil.pid_exists(pid) for pid in pids)
    with pytest.raises(RuntimeError):
        s.sup.add(FP32)
    evs, _ = store.read_events(s.store.path)
    assert evs[-1]["type"] == events.SESSION_ENDED
    never = [e for e in evs if e.get("run") == queued and e["type"] == events.FINISHED]
    assert never and never[0]["reason"] == "stopped" and "seconds" not in never[0]
    add = [e for e in evs if e["type"] == events.CONTROL and e["action"] == "add"]
    assert [e["run"] for e in add] == [paused, queued] and add[1]["replaces"] == "eager-fp32"


def test_unknown_runs_are_refused_and_close_before_run_starts_nothing(tmp_path):
    session = SessionStore.create(tmp_path, "control")
    sup = Supervisor(session, Plan(RunSettings.make(recipe=str(SLOW)), [FP32], interval=None))
    for call in (sup.stop, sup.pause, sup.resume, sup.restart):
        with pytest.raises(KeyError):
            call("nope")
    with pytest.raises(KeyError):
        sup.add(AMP, replaces="nope")
    sup.close()
    t0 = time.monotonic()
    assert sup.run(keep_open=True) == "done"
    assert time.monotonic() - t0 < 1.0
    assert sup.states() == {"eager-fp32": "stopped"}
    assert no_children_left(0) == []
    session.close()
    kinds = [e["type"] for e in store.read_events(session.path)[0]]
    assert kinds == ["session_started", "run_queued", "control", "finished", "session_ended"]


def test_a_run_without_steps_is_flagged_hung_and_dump_writes_its_stacks(tmp_path):
    from tuimon.control.supervisor import Plan, Supervisor
    from tuimon.sessiondir import store as store_mod
    from tuimon.sessiondir.store import SessionStore
    from tuimon.variants import Variant

    store = SessionStore.create(tmp_path, "hang")
    settings = RunSettings.make(recipe=str(TEST_RECIPES / "slow_steps.py"), steps=4, warmup="0",
                                knobs=(("sleep_ms", "2500"),))
    plan = Plan(settings, [Variant("eager", "fp32")], "sequential", interval=None, hang_s=1.0)
    sup = Supervisor(store, plan)
    done = threading.Thread(target=sup.run, daemon=True)
    done.start()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # a step arrives, then 2.5 s pass without one
        evs, _ = store_mod.read_events(store.path)
        if any(e["type"] == events.WARNING and e.get("hung") for e in evs):
            break
        time.sleep(0.2)
    sup.dump("eager-fp32")
    time.sleep(1.0)
    sup.close()
    done.join(60)
    evs, _ = store_mod.read_events(store.path)
    hung = [e for e in evs if e["type"] == events.WARNING and e.get("hung")]
    assert hung and "no step for" in hung[0]["text"] and hung[0]["run"] == "eager-fp32"
    assert any(e["type"] == events.CONTROL and e.get("action") == "dump" for e in evs)
    log = store.log_path("eager-fp32").read_text()
    assert "Current thread" in log and "slow_steps.py" in log  # faulthandler's stacks, in the sleep
