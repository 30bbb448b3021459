"""The durable store: what survives a full disk, a deleted directory, a killed supervisor, a torn
write. Real processes where the issue asks for them (the CLI, its runners, the daemon)."""

from __future__ import annotations

import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest
from conftest import RECIPES, TEST_RECIPES, wait_for

from tuimon import events
from tuimon.control import channel
from tuimon.control.supervisor import Plan, Supervisor
from tuimon.sessiondir import store
from tuimon.sessiondir.store import SessionStore, StoreWriteError
from tuimon.settings import RunSettings
from tuimon.ui.app import TuimonApp
from tuimon.ui.sources import RemoteSource
from tuimon.variants import Variant

SLOW = str(TEST_RECIPES / "slow_steps.py")
TINY = str(RECIPES / "tiny_mlp.py")


def file_limit(nbytes: int):
    """preexec_fn: files this process (and its children) write stop at ``nbytes`` (EFBIG)."""
    return lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (nbytes, nbytes))


def left_behind(session: Path) -> list[psutil.Process]:
    """Processes still running for this session (runners name it in --profile-dir)."""
    found = []
    for p in psutil.process_iter(["cmdline", "status"]):
        if str(session) in " ".join(p.info["cmdline"] or []) and p.info["status"] != psutil.STATUS_ZOMBIE:
            found.append(p)
    return found


def of_type(session: Path, kind: str) -> list[dict]:
    return [e for e in store.read_events(session)[0] if e["type"] == kind]


# ---- fsync at least once a second -------------------------------------------------------------
def test_events_are_on_disk_within_a_second_while_a_session_runs(tmp_path, monkeypatch):
    """A real supervisor and runner (slow steps, no probes, so nothing else writes): every fsync
    is recorded with the file size it covered; at no time is a byte older than ~1 s unsynced.
    And read from outside, as `tail` would, the newest step is never more than ~1 s old."""
    synced: list[tuple[float, int]] = []
    real_fsync = os.fsync

    def fsync(fd):
        real_fsync(fd)
        synced.append((time.monotonic(), os.fstat(fd).st_size))

    monkeypatch.setattr(os, "fsync", fsync)
    s = SessionStore.create(tmp_path, "sync")
    plan = Plan(RunSettings.make(recipe=str(SLOW), device="cpu", warmup="0", steps=60,
                                 knobs=(("sleep_ms", "50"),)), [Variant("eager", "fp32")], interval=None)
    sup = Supervisor(s, plan)
    thread = threading.Thread(target=sup.run)
    thread.start()
    lags, sizes = [], []  # (when the file grew to size) as seen from outside
    path = s.path / store.EVENTS
    while thread.is_alive():
        size = path.stat().st_size
        if not sizes or size > sizes[-1][1]:
            sizes.append((time.monotonic(), size))
        steps = [e for e in store.read_events(s.path)[0] if e["type"] == "step"]
        if 5 < len(steps) < 60:  # while it steps (after the last step, the newest one ages)
            lags.append(time.time() - steps[-1]["t"])
        time.sleep(0.1)
    thread.join()
    s.close()
    assert len([e for e in store.read_events(s.path)[0] if e["type"] == "step"]) == 60
    assert lags and max(lags) < 1.0, max(lags)  # the runner batches ~0.25 s, the store adds nothing
    assert len(synced) >= 3
    for seen_at, size in sizes:  # each size seen was fsynced within 1 s (+ one loop tick)
        covered = [t for t, n in synced if n >= size]
        assert covered and covered[0] - seen_at <= 1.0 + 0.25, (seen_at, size, synced)
    assert synced[-1][1] == path.stat().st_size  # the end of the session is synced too


def test_a_write_that_fails_is_cut_back_and_kept_for_later(tmp_path, monkeypatch):
    s = SessionStore.create(tmp_path, "full")
    s.append([events.make(events.STEP, "r", i=0, ms=1.0)])
    real_write = os.write
    calls = {"n": 0}

    def half_then_full(fd, data):  # the OS takes part of the batch, then the disk is full
        calls["n"] += 1
        if calls["n"] == 1:
            return real_write(fd, bytes(data[:10]))
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "write", half_then_full)
    with pytest.raises(StoreWriteError, match=r"cannot write to .*events.jsonl: No space left on device"):
        s.append([events.make(events.STEP, "r", i=1, ms=1.0)])
    assert store.read_events(s.path) == ([store.read_events(s.path)[0][0]], 0)  # no torn line
    assert [e["i"] for e in s.unwritten] == [1]
    monkeypatch.setattr(os, "write", real_write)  # room again: the next write carries both
    s.append([events.make(events.STEP, "r", i=2, ms=1.0)])
    s.close()
    evs, bad = store.read_events(s.path)
    assert [e["i"] for e in evs] == [0, 1, 2] and bad == 0 and s.unwritten == []


def test_dev_full_is_a_one_line_store_error(tmp_path):
    s = SessionStore.create(tmp_path, "devfull")
    s.close()
    (s.path / store.EVENTS).unlink()
    (s.path / store.EVENTS).symlink_to("/dev/full")
    s = SessionStore(s.path)
    with pytest.raises(StoreWriteError) as err:
        s.append([events.make(events.STEP, "r", i=0, ms=1.0)])
    assert str(err.value) == f"cannot write to {s.path / store.EVENTS}: No space left on device"
    s.close()  # never raises


# ---- a full disk mid-session ------------------------------------------------------------------
def test_headless_file_too_large_stops_the_runs_with_one_line(tuimon, tmp_path):
    """RLIMIT_FSIZE 64 KiB on the CLI (and so its runners): events.jsonl hits it within seconds
    of stepping. The runs are stopped the normal way, the queued one never starts, one line
    says so, exit 3, nothing left running, and the session still summarizes."""
    limit = 64 * 1024
    # Sequential, so that one run is still queued; 5 ms steps keep each batch of events (a
    # quarter second's) far below the limit.
    proc, session = tuimon(SLOW, "--modes", "eager", "--precision", "fp32,amp", "--steps", "1000000",
                           "--schedule", "sequential", "--set", "sleep_ms=5",
                           "--warmup", "0", "--interval", "0.2", preexec_fn=file_limit(limit), timeout=120)
    assert proc.returncode == 3, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0] == (f"tuimon: error: cannot write to {session / 'events.jsonl'}: File too large — "
                        f"runs stopped; what was written so far is kept; summary in {session / 'summary.md'}")
    assert "Traceback" not in proc.stdout + proc.stderr
    assert "eager/fp32" in proc.stdout  # the summary table, from what was measured
    assert not left_behind(session)
    raw = (session / "events.jsonl").read_bytes()
    assert len(raw) <= limit and raw.endswith(b"\n")  # whole lines only
    evs, bad = store.read_events(session)
    assert bad == 0 and any(e["type"] == "step" for e in evs)
    assert not any(e.get("run") == "eager-amp" and e["type"] == "run_started" for e in evs)
    meta = store.read_meta(session)
    assert meta["status"] == "failed" and "File too large" in meta["error"]
    # The final summary counts the events that never reached the file (the stop, the end); the
    # queued run never started, so it is 'not run' rather than 'stopped'.
    summary = json.loads((session / "summary.json").read_text())
    assert [r["status"] for r in summary["runs"]] == ["stopped", "not run"]
    assert any("File too large" in w for w in summary["warnings"])
    again, _ = tuimon("summary", str(session), "--format", "json")
    assert again.returncode == 0 and again.stderr == ""
    assert json.loads(again.stdout)["runs"][0]["timing"]["measured"] > 0


async def test_the_daemon_stops_on_a_full_store_and_the_tui_says_why(tuimon, tmp_path, reaper):
    """The detached path: the daemon (started under the same file limit) stops its runs, tells
    the attached TUI over the socket (the file cannot carry it), logs one line and exits 3."""
    proc, session = tuimon(SLOW, "--modes", "eager", "--steps", "1000000", "--set", "sleep_ms=5",
                           "--warmup", "0", "--no-probes", "--detach",
                           preexec_fn=file_limit(96 * 1024), timeout=60)
    assert proc.returncode == 0, proc.stderr
    daemon = store.read_meta(session)["owner"]["pid"]
    source = RemoteSource(session)
    app = TuimonApp(source)
    said: list[tuple[str, str]] = []
    app.notify = lambda text, severity="information", **kw: said.append((severity, text))
    async with app.run_test(size=(120, 32)) as pilot:
        deadline = time.monotonic() + 90
        while not source.error:
            assert time.monotonic() < deadline, "the TUI never heard of the store error"
            await pilot.pause(0.2)
            app.tick()
        await pilot.pause(0.3)
        app.tick()
    assert "cannot write to" in source.error and "File too large" in source.error
    assert any(sev == "error" and "File too large" in text and "being stopped" in text for sev, text in said)
    wait_for(lambda: not psutil.pid_exists(daemon) or psutil.Process(daemon).status() == psutil.STATUS_ZOMBIE,
             30, "the daemon to exit")
    assert not left_behind(session)
    log = (session / "daemon.log").read_text().strip().splitlines()
    assert log[-1].startswith("tuimon: error: cannot write to") and "runs stopped" in log[-1]
    assert "Traceback" not in "\n".join(log)
    assert store.read_meta(session)["status"] == "failed"
    assert not (session / channel.SOCKET).exists()
    again, _ = tuimon("summary", str(session))
    assert again.returncode == 0 and "eager/fp32" in again.stdout


# ---- the session directory deleted mid-session -----------------------------------------------
def test_a_deleted_session_directory_is_recreated_with_everything(tmp_path, inductor_cache):
    out = tmp_path / "sessions"
    cmd = [sys.executable, "-m", "tuimon", SLOW, "--modes", "eager", "--steps", "80", "--repeats", "1",
           "--set",
           "sleep_ms=40", "--warmup", "0", "--interval", "0.5", "--out", str(out),
           "--cache-dir", str(inductor_cache)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    session = wait_for(lambda: next(iter(out.glob("*")), None) if out.exists() else None, 20, "the session")
    wait_for(lambda: len([e for e in store.read_events(session)[0] if e["type"] == "step"]) >= 10
             if store.is_session(session) else False, 60, "some steps")
    shutil.rmtree(session)  # someone cleans up the wrong directory
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 0, stderr
    warnings = [line for line in stderr.splitlines() if line.startswith("tuimon: warning: ")]
    assert len(warnings) == 1 and "was deleted while the session ran: recreated" in warnings[0], stderr
    assert "Traceback" not in stdout + stderr
    evs, bad = store.read_events(session)
    assert bad == 0
    assert [e["i"] for e in evs if e["type"] == "step"] == list(range(80))  # nothing lost
    assert evs[0]["type"] == "session_started" and evs[-1]["type"] == "session_ended"
    assert any(e["type"] == "warning" and e.get("store") for e in evs)
    assert store.read_meta(session)["status"] == "done"  # meta.json rewritten too
    assert (session / "summary.md").is_file() and (session / "logs").is_dir()


# ---- reading what a killed supervisor or a torn write left --------------------------------------
def test_summary_of_a_session_whose_supervisor_was_killed(tuimon, tmp_path, inductor_cache):
    out = tmp_path / "sessions"
    cmd = [sys.executable, "-m", "tuimon", SLOW, "--modes", "eager", "--steps", "100000", "--repeats", "1",
           "--set",
           "sleep_ms=20", "--warmup", "0", "--interval", "0.5", "--out", str(out),
           "--cache-dir", str(inductor_cache)]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=tmp_path)
    try:
        session = wait_for(lambda: next(iter(out.glob("*")), None) if out.exists() else None, 20)
        wait_for(lambda: len(of_type(session, "step")) >= 20 if store.is_session(session) else False, 60)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    wait_for(lambda: not left_behind(session), 20, "the orphaned runner to stop by itself")
    flushed = len(of_type(session, "step"))
    with open(session / "events.jsonl", "a") as f:
        f.write('{"type": "step", "run": "eager-fp32", "i": 99999, "m')  # a torn last write
    proc, _ = tuimon("summary", str(session), "--format", "json")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.strip().splitlines() == [
        "tuimon: warning: events.jsonl: 1 unreadable line skipped (torn write?)"]
    summary = json.loads(proc.stdout)
    assert summary["unreadable_lines"] == 1 and summary["runs"][0]["timing"]["steps"] == flushed
    assert "1 unreadable line(s) in events.jsonl were skipped" in (session / "summary.md").read_text()


def test_summary_force_reads_a_session_without_its_meta_json(tuimon, tmp_path):
    # Without --force it is bad input (tests/e2e/test_bad_input.py); with it, the events are summarized.
    data = Path(__file__).resolve().parents[1] / "data" / "session_tiny_mlp"
    for name, damage in (("missing", lambda p: p.unlink()), ("unreadable", lambda p: p.write_text("{"))):
        copy = tmp_path / name
        shutil.copytree(data, copy)
        damage(copy / "meta.json")
        proc, _ = tuimon("summary", str(copy), "--force")
        assert proc.returncode == 0, proc.stderr
        assert proc.stderr.strip().splitlines() == [
            f"tuimon: warning: meta.json {name}: the summary lacks the command, host and settings"]
        assert "| eager/fp32 |" in proc.stdout


def test_replay_skips_unreadable_lines_and_says_how_many(tmp_path):
    from tuimon.ui.sources import ReplaySource

    copy = tmp_path / "s"
    shutil.copytree(Path(__file__).resolve().parents[1] / "data" / "session_tiny_mlp", copy)
    good = len(store.read_events(copy)[0])
    with open(copy / "events.jsonl", "a") as f:
        f.write("\x00\x00garbage\n" + '{"type": "step", "run": "eager-fp32", "i": 1')  # torn last line
    got: list[list[dict]] = []
    source = ReplaySource(copy, follow=False)
    source._tail(got.append)
    flat = [e for batch in got for e in batch]
    notes = [e for e in flat if e.get("notify")]
    assert len(flat) - len(notes) == good
    assert [e["text"] for e in notes] == ["events.jsonl: 2 unreadable lines skipped (torn write?)"]
    # Following a session, a torn last line may still be being written: not counted (yet).
    got.clear()
    following = ReplaySource(copy, follow=True, poll=0.05)
    threading.Thread(target=following._tail, args=(got.append,), daemon=True).start()
    wait_for(lambda: any(e.get("notify") for batch in got for e in batch), 5, "the note")
    following.close()
    assert [e["text"] for batch in got for e in batch if e.get("notify")] == [
        "events.jsonl: 1 unreadable line skipped (torn write?)"]


def test_a_deleted_directory_that_cannot_be_recreated_still_gives_back_every_event(tmp_path):
    # Deleted, and its path now a file (or the disk full): recreation fails, and the open, unlinked
    # file is the only full copy; closing reads the events back from it for the summary.
    s = SessionStore.create(tmp_path, "gone")
    steps = [events.make(events.STEP, "r", i=i, ms=1.0) for i in range(50)]
    s.append(steps)
    shutil.rmtree(s.path)
    s.path.write_text("in the way")
    s.sync_s = 0.0
    with pytest.raises(StoreWriteError, match="cannot recreate the deleted session directory"):
        s.tick()
    stored, bad = s.close(read_back=True)
    assert bad == 0 and [e["i"] for e in stored] == list(range(50))


def test_a_summary_that_cannot_be_written_is_one_line_and_exit_3(tmp_path):
    out = tmp_path / "sessions"
    cmd = [sys.executable, "-m", "tuimon", SLOW, "--modes", "eager", "--steps", "60", "--repeats", "1",
           "--set",
           "sleep_ms=30", "--warmup", "0", "--no-probes", "--out", str(out), "--headless"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    session = wait_for(lambda: next(iter(out.glob("*")), None) if out.exists() else None, 20, "the session")
    (session / "summary.md").mkdir()  # the summary cannot be written where it goes
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 3, stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in stdout + stderr, stderr
    assert lines[0].startswith(f"tuimon: error: cannot write the summary into {session}: Is a directory")
    assert "events.jsonl holds everything measured" in lines[0]
    assert [e["i"] for e in of_type(session, "step")] == list(range(60))
