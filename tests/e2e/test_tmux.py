"""End to end as a user over SSH sees it: tuimon in tmux, keys by send-keys, screen by capture-pane."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time

import psutil
import pytest
from conftest import RECIPES, TEST_RECIPES

from tuimon.sessiondir import store

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux not installed")


SERVER = f"tuimon-test-{os.getpid()}"  # a tmux server of our own: our environment, no one else's


def tmux(*args: str) -> str:
    return subprocess.run(["tmux", "-L", SERVER, *args], capture_output=True, text=True).stdout


def screen(name: str) -> str:
    return tmux("capture-pane", "-p", "-t", name)


def wait_for(predicate, timeout: float, what: str, name: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.25)
    raise AssertionError(f"timed out waiting for {what}; screen:\n{screen(name)}")


def test_tui_in_tmux_runs_two_panels_and_m_makes_a_new_variant(tmp_path, inductor_cache, reaper):
    name = f"tuimon-test-{tmp_path.name}"
    out = tmp_path / "sessions"
    cmd = (f"{sys.executable} -m tuimon {RECIPES / 'tiny_mlp.py'} --modes eager,default "
           f"--schedule parallel --steps 200000 --repeats 1 --interval 0.5 --out {out} "
           f"--cache-dir {inductor_cache}; echo EXITED $?; sleep 30")
    tmux("new-session", "-d", "-s", name, "-x", "120", "-y", "32", cmd)
    try:
        # Both panels reach steady state and show a median step time.
        wait_for(lambda: screen(name).count("median ") >= 2 and "–  (warming" not in screen(name),
                 90, "two panels with step times", name)
        text = screen(name)
        assert "eager/fp32" in text and "default/fp32" in text
        session = next(out.iterdir())

        tmux("send-keys", "-t", name, "m")  # focused panel: eager/fp32 -> default/fp32
        def replaced():
            evs = [json.loads(line) for line in (session / "events.jsonl").read_text().splitlines()]
            return [e for e in evs if e["type"] == "run_queued" and e.get("replaces") == "eager-fp32"]
        queued = wait_for(replaced, 30, "a new variant in the store", name)
        assert queued[0]["mode"] == "default" and queued[0]["run"] == "default-fp32-2"
        wait_for(lambda: screen(name).count("default/fp32") >= 2, 30, "the new panel", name)

        tmux("send-keys", "-t", name, "q")
        wait_for(lambda: "stop them and quit" in screen(name), 10, "the quit question", name)
        tmux("send-keys", "-t", name, "s")
        wait_for(lambda: "EXITED 0" in screen(name), 60, "tuimon to exit", name)
        assert (session / "summary.md").is_file()
        meta = json.loads((session / "meta.json").read_text())
        pids = [json.loads(line)["pid"] for line in (session / "events.jsonl").read_text().splitlines()
                if '"run_started"' in line]
        assert len(pids) >= 2  # the replacement may not have started before the quit
        assert not any(psutil.pid_exists(p) and psutil.Process(p).status() != "zombie" for p in pids)
        assert meta["status"] in ("done", "interrupted")
    finally:
        tmux("kill-session", "-t", name)


def shown_steps(name: str) -> int | None:
    """The step count in the panel's border ('steady · 123 steps · 4.5 s')."""
    found = re.findall(r"· (\d+) steps", screen(name))
    return int(found[0]) if found else None


def test_ssh_drop_kill_the_tmux_session_then_attach_from_a_new_one(tmp_path, inductor_cache, reaper):
    first, second = f"tuimon-drop-{tmp_path.name}", f"tuimon-attach-{tmp_path.name}"
    out = tmp_path / "sessions"
    cmd = (f"{sys.executable} -m tuimon {TEST_RECIPES / 'slow_steps.py'} --modes eager "
           f"--steps 100000 --repeats 1 --set sleep_ms=20 --warmup 0 --interval 0.5 --out {out} "
           f"--cache-dir {inductor_cache}")
    tmux("new-session", "-d", "-s", first, "-x", "100", "-y", "30", cmd)
    try:
        wait_for(lambda: (shown_steps(first) or 0) > 5, 60, "the run's first steps", first)
        session = next(out.iterdir())
        tui = [p for p in psutil.process_iter(["cmdline"])  # the CLI that runs the TUI
               if (p.info["cmdline"] or [])[1:3] == ["-m", "tuimon"] and str(out) in p.info["cmdline"]]
        assert len(tui) == 1
        daemon = store.read_meta(session)["owner"]["pid"]

        tmux("kill-session", "-t", first)  # the SSH connection drops: the terminal is gone
        tui[0].wait(10)
        assert psutil.pid_exists(daemon)

        tmux("new-session", "-d", "-s", second, "-x", "100", "-y", "30",
             f"{sys.executable} -m tuimon attach --out {out}; echo EXITED $?; sleep 30")
        seen = wait_for(lambda: shown_steps(second), 30, "the attached panel", second)
        wait_for(lambda: (shown_steps(second) or 0) > seen + 20, 30, "the run still advancing", second)
        assert "live" in screen(second)

        tmux("send-keys", "-t", second, "q")
        wait_for(lambda: "they go on" in screen(second), 10, "the quit question", second)
        tmux("send-keys", "-t", second, "s")
        wait_for(lambda: "EXITED 0" in screen(second), 60, "tuimon attach to exit", second)
        meta = store.read_meta(session)
        assert meta["status"] == "done" and (session / "summary.md").is_file()
        steps = [e["i"] for e in store.read_events(session)[0] if e["type"] == "step"]
        assert steps == list(range(len(steps))) and len(steps) > seen + 20
        wait_for(lambda: not psutil.pid_exists(daemon) or psutil.Process(daemon).status() == "zombie",
                 10, "the daemon to exit", second)
    finally:
        tmux("kill-session", "-t", first)
        tmux("kill-session", "-t", second)
