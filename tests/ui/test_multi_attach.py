"""Several viewers on one session (issue 7): two TUIs attached to one detached daemon at once, as
from two SSH connections. Real processes: the daemon and its runner; each TUI is a Pilot app on a
RemoteSource of its own (its own connection, its own tail of events.jsonl)."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import time

from conftest import TEST_RECIPES
from test_detach import daemon_pid, gone, of_type, runner_pids, steps, wait_for

from tuimon.control import channel
from tuimon.sessiondir import store
from tuimon.ui.app import TuimonApp
from tuimon.ui.sources import RemoteSource

SLOW = str(TEST_RECIPES / "slow_steps.py")
RUN = "eager-fp32"
ADDED = "default-fp32"  # n offers the first mode not shown first


async def until(pairs, predicate, what: str, timeout: float = 60.0) -> None:
    """Tick every app until ``predicate()`` holds."""
    deadline = time.monotonic() + timeout
    while True:
        for app, pilot in pairs:
            await pilot.pause(0.05)
            app.tick()
        if predicate():
            return
        assert time.monotonic() < deadline, f"timed out waiting for {what}: " + "; ".join(
            f"{app.model.panels} {({r: (x.state, x.steps) for r, x in app.model.runs.items()})}"
            for app, _ in pairs)
        await pilot.pause(0.15)


async def toasts(app, pilot) -> str:
    """The notifications on screen (the toast rack shows them after a refresh)."""
    await pilot.pause(0.2)
    return " | ".join(str(t.render()) for t in app.screen.query("Toast"))


def actions(session) -> list[tuple[str, str | None]]:
    return [(e["action"], e.get("run")) for e in of_type(session, "control")]


async def test_two_viewers_see_everything_and_steer_once(tuimon, reaper):
    proc, session = tuimon(SLOW, "--modes", "eager", "--steps", "100000", "--set", "sleep_ms=20",
                           "--warmup", "0", "--interval", "0.5", "--schedule", "parallel", "--detach")
    assert proc.returncode == 0, proc.stderr
    wait_for(lambda: len(steps(session)) >= 10, 60, "the first steps")
    a, b = TuimonApp(RemoteSource(session)), TuimonApp(RemoteSource(session))
    async with contextlib.AsyncExitStack() as stack:
        pa = await stack.enter_async_context(a.run_test(size=(120, 32)))
        pb = await stack.enter_async_context(b.run_test(size=(120, 32), notifications=True))
        both = [(a, pa), (b, pb)]
        assert channel.request(session, "hello")["attached"] == 2
        ls = subprocess.run([sys.executable, "-m", "tuimon", "ls", "--out", str(session.parent)],
                            capture_output=True, text=True, timeout=30)
        assert re.search(rf"{session.name}\s+running\s.*\s{daemon_pid(session)}\s+2$", ls.stdout,
                         re.M), ls.stdout
        # Each has the whole history (the steps from before it attached) and then the live ones.
        recorded = len(steps(session))
        await until(both, lambda: all(app.model.runs.get(RUN) and app.model.runs[RUN].steps > recorded
                                      for app in (a, b)), "both to follow the run")

        # A pauses: once in the store, both show it paused; B resumes: both show it running.
        await pa.press("space")
        await until(both, lambda: all(app.model.runs[RUN].state == "paused" for app in (a, b)),
                    "both to show the pause")
        await pb.press("space")
        await until(both, lambda: all(app.model.runs[RUN].state == "steady" for app in (a, b)),
                    "both to show the resume")
        # B adds a variant (n lists them, enter picks the first): one new run, a panel on both.
        await pb.press("n")
        await pb.pause(0.3)
        await pb.press("enter")
        await until(both, lambda: all(app.model.panels == [RUN, ADDED]
                                      and app.model.runs[ADDED].steps > 3 for app in (a, b)),
                    "both to show the added run stepping")
        assert actions(session) == [("pause", RUN), ("resume", RUN), ("add", ADDED)]
        assert len([e for e in of_type(session, "run_queued") if e["run"] == ADDED]) == 1

        # A detaches: B is not disturbed, the runs go on.
        await pa.press("q")
        await pa.pause(0.3)
        assert a.screen.__class__.__name__ == "QuitScreen"
        await pa.press("d")
        await until([(b, pb)], lambda: not a.is_running, "A to exit")
        assert a.return_value == "detached"
        assert channel.request(session, "hello")["attached"] == 1
        before = b.model.runs[RUN].steps
        await until([(b, pb)], lambda: b.model.runs[RUN].steps > before + 10, "B to go on")
        assert channel.request(session, "states") == {RUN: "running", ADDED: "running"}

        # C attaches (a third connection) and quits with stop: B shows the runs stopped and the
        # session ended; its keys then say so instead of crashing, and q quits at once.
        c = TuimonApp(RemoteSource(session))
        pc = await stack.enter_async_context(c.run_test(size=(120, 32)))
        await until([(b, pb), (c, pc)], lambda: c.model.runs.get(ADDED)
                    and c.model.runs[ADDED].state == "steady", "C to follow")
        await pc.press("q")
        await pc.pause(0.3)
        await pc.press("s")
        await until([(b, pb), (c, pc)], lambda: not c.is_running, "C to stop the session")
        assert c.source.closed and c.source.status == "done"
        await until([(b, pb)], lambda: b.model.ended == "done", "B to show the session ended")
        assert {r.state for r in b.model.runs.values()} == {"stopped"}
        assert b.is_running and b.sub_title.endswith("· done")
        assert "the session has ended (done)" in await toasts(b, pb)
        await pb.press("r")  # a command to a daemon that has gone: a notice, not a crash
        await pb.pause(0.3)
        assert b.is_running
        t0 = time.monotonic()
        await pb.press("q")
        await until([(b, pb)], lambda: not b.is_running, "B to quit", timeout=10)
        assert time.monotonic() - t0 < 5
    assert actions(session)[-1] == ("close", None)
    assert [e["reason"] for e in of_type(session, "finished")] == ["stopped", "stopped"]
    assert store.read_meta(session)["status"] == "done" and (session / "summary.md").is_file()
    wait_for(lambda: gone(runner_pids(session)), 20, "the runners to exit")


async def test_keys_after_the_daemon_died_are_notices_not_a_crash(tuimon, reaper):
    """The model still shows the run going (nobody wrote its end), but every key that reaches the
    daemon finds it gone: each says so, the app goes on, and q → stop quits at once."""
    proc, session = tuimon(SLOW, "--modes", "eager", "--steps", "100000", "--set", "sleep_ms=20",
                           "--warmup", "0", "--interval", "0.5", "--detach")
    assert proc.returncode == 0, proc.stderr
    app = TuimonApp(RemoteSource(session))
    async with app.run_test(size=(120, 32), notifications=True) as pilot:
        pairs = [(app, pilot)]
        await until(pairs, lambda: app.model.runs.get(RUN) and app.model.runs[RUN].steps > 3, "steps")
        os.kill(daemon_pid(session), signal.SIGKILL)
        wait_for(lambda: gone([daemon_pid(session)]), 10, "the daemon to die")
        for key in ("p", "d", "space"):
            await pilot.press(key)
            await pilot.pause(0.2)
            assert app.is_running, key
        shown = await toasts(app, pilot)
        assert all(f"{cmd} failed" in shown for cmd in ("profile", "dump", "pause")), shown
        await pilot.press("q")
        await pilot.pause(0.3)
        await pilot.press("s")
        await until(pairs, lambda: not app.is_running, "the app to quit", timeout=10)
    wait_for(lambda: gone(runner_pids(session)), 20, "the orphaned runner to stop")
