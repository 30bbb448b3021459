"""End to end as a user over SSH sees it: tuimon in tmux, keys by send-keys, screen by capture-pane."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time

import psutil
import pytest
from conftest import RECIPES

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux not installed")


def tmux(*args: str) -> str:
    return subprocess.run(["tmux", *args], capture_output=True, text=True).stdout


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


def test_tui_in_tmux_runs_two_panels_and_m_makes_a_new_variant(tmp_path, inductor_cache):
    name = f"tuimon-test-{tmp_path.name}"
    out = tmp_path / "sessions"
    cmd = (f"{sys.executable} -m tuimon {RECIPES / 'tiny_mlp.py'} --modes eager,default "
           f"--schedule parallel --steps 200000 --interval 0.5 --out {out} "
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
        wait_for(lambda: "Stop them and quit?" in screen(name), 10, "the quit question", name)
        tmux("send-keys", "-t", name, "y")
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
