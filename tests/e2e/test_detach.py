"""Surviving the SSH drop: the runs belong to a detached daemon, the TUI is only its client.

Real processes throughout: tuimon on a pseudo-terminal (as over SSH, so the TUI runs), killed
or hung up during a run; the daemon and its runner children checked with psutil; attach from a
new process; ls; the control socket's permission bits and its uid check.
"""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import shutil
import signal
import stat
import struct
import subprocess
import sys
import tempfile
import termios
import threading
import time
from pathlib import Path

import psutil
import pytest
from conftest import TEST_RECIPES, wait_for

from tuimon import detach
from tuimon.control import channel
from tuimon.sessiondir import listing, store
from tuimon.ui.app import TuimonApp
from tuimon.ui.sources import RemoteSource, ReplaySource
from tuimon.ui.widgets.run_panel import RunPanel
from tuimon.variants import Variant

SLOW = str(TEST_RECIPES / "slow_steps.py")
DATA = Path(__file__).resolve().parents[1] / "data" / "session_tiny_mlp"
ANSI = re.compile(rb"\x1b(\[[0-9;?<>=]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)|[@-Z\\-_()*+][0-9A-Za-z]?)")


class PtyTuimon:
    """``tuimon ARGS`` with a pseudo-terminal as its controlling terminal, as in an SSH session:
    closing the master side hangs it up (the kernel sends SIGHUP), as a dropped connection does."""

    def __init__(self, args: list[str], cwd: Path, cols: int = 120, rows: int = 32) -> None:
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        env = {**os.environ, "TERM": "xterm-256color"}
        env.pop("COLUMNS", None)
        env.pop("LINES", None)
        self.proc = subprocess.Popen([sys.executable, "-m", "tuimon", *args], stdin=slave,
                                     stdout=slave, stderr=slave, cwd=cwd, env=env,
                                     start_new_session=True, preexec_fn=_controlling_tty)
        os.close(slave)
        self.master: int | None = master
        self.raw = bytearray()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        while True:
            try:
                data = os.read(self.master, 65536)
            except (OSError, TypeError):
                return
            if not data:
                return
            self.raw += data

    def text(self) -> str:
        return ANSI.sub(b"", bytes(self.raw)).decode("utf-8", "replace")

    def send(self, keys: str) -> None:
        os.write(self.master, keys.encode())

    def wait_text(self, needle: str, timeout: float = 20.0) -> None:
        wait_for(lambda: needle in self.text(), timeout, f"{needle!r} on screen:\n{self.text()[-2000:]}")

    def hang_up(self) -> None:
        os.close(self.master)
        self.master = None

    def wait(self, timeout: float = 60.0) -> int:
        return self.proc.wait(timeout)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        if self.master is not None:
            os.close(self.master)
            self.master = None


def _controlling_tty() -> None:  # in the child, after setsid(): make stdin its terminal
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)
    # A hang-up kills it as it would a command of an SSH login shell, even when these tests
    # themselves run under nohup (SIGHUP ignored is inherited).
    signal.signal(signal.SIGHUP, signal.SIG_DFL)


def session_in(out: Path) -> Path | None:
    found = sorted(p for p in out.glob("*") if store.is_session(p)) if out.exists() else []
    return found[-1] if found else None


def steps(session: Path, run: str = "eager-fp32") -> list[int]:
    evs, _ = store.read_events(session)
    return [e["i"] for e in evs if e["type"] == "step" and e.get("run") == run]


def of_type(session: Path, kind: str) -> list[dict]:
    return [e for e in store.read_events(session)[0] if e["type"] == kind]


def gone(pids) -> bool:
    for pid in pids:
        try:
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                return False
        except psutil.NoSuchProcess:
            pass
    return True


def daemon_pid(session: Path) -> int:
    return wait_for(lambda: (store.read_meta(session).get("owner") or {}).get("kind") == "daemon"
                    and store.read_meta(session)["owner"]["pid"], 20, "the daemon's pid in meta.json")


def runner_pids(session: Path) -> list[int]:
    return [e["pid"] for e in of_type(session, "run_started")]


def slow_args(out: Path, cache: Path, steps_: int, sleep_ms: int) -> list[str]:
    return [SLOW, "--modes", "eager", "--steps", str(steps_), "--repeats", "1",
            "--set", f"sleep_ms={sleep_ms}",
            "--warmup", "0", "--interval", "0.5", "--out", str(out), "--cache-dir", str(cache)]


# ---- the TUI dies, the runs go on -----------------------------------------------------------
@pytest.mark.parametrize("how", ["hangup", "sigkill"])
async def test_the_run_survives_the_tui_and_attach_shows_it(how, tmp_path, inductor_cache, reaper):
    out = tmp_path / "sessions"
    tui = PtyTuimon(slow_args(out, inductor_cache, 60, 50), tmp_path)
    try:
        session = wait_for(lambda: session_in(out), 20, "the session directory")
        wait_for(lambda: len(steps(session)) >= 5, 60, "the first steps")
        daemon = daemon_pid(session)
        runner = runner_pids(session)[0]
        assert daemon in {p.pid for p in psutil.Process(tui.proc.pid).children()}
        if how == "hangup":
            tui.hang_up()  # the SSH connection drops: the kernel hangs up the terminal
        else:
            tui.proc.kill()
        rc = tui.wait(20)
    finally:
        tui.close()
    print(f"tuimon's exit status after {how}: {rc}")
    assert rc == (-signal.SIGHUP if how == "hangup" else -signal.SIGKILL)
    at_kill = len(steps(session))
    assert psutil.pid_exists(daemon) and psutil.pid_exists(runner)
    wait_for(lambda: store.read_meta(session).get("status") == "done", 90, "the session to end")
    # Every step is there, in order; the run finished by itself; the summary was written.
    assert steps(session) == list(range(60)) and at_kill < 60
    assert [e["reason"] for e in of_type(session, "finished")] == ["steps"]
    assert of_type(session, "session_ended")[0]["status"] == "done"
    assert "eager/fp32" in (session / "summary.md").read_text()
    assert json.loads((session / "summary.json").read_text())
    wait_for(lambda: gone([daemon, runner]), 20, "the daemon and its runner to exit")
    assert not (session / channel.SOCKET).exists()
    assert listing.state_of(store.read_meta(session)) == "done"

    # attach on the finished session: read-only, with a note, the whole run there.
    source, note = detach.open_source(session)
    assert isinstance(source, ReplaySource) and "ended (done)" in note
    app = TuimonApp(source, note=note)
    async with app.run_test(size=(120, 32)) as pilot:
        deadline = time.monotonic() + 10
        while not (app.model.runs.get("eager-fp32") and app.model.runs["eager-fp32"].steps == 60):
            assert time.monotonic() < deadline
            await pilot.pause(0.1)
        await pilot.pause(0.5)
        assert app.model.runs["eager-fp32"].state == "done"
        assert "done · 60 steps" in str(app.query_one(RunPanel).border_subtitle)
        assert app.sub_title.endswith("· done") and app.source.read_only


def test_q_then_stop_ends_every_process(tmp_path, inductor_cache, reaper):
    out = tmp_path / "sessions"
    tui = PtyTuimon(slow_args(out, inductor_cache, 100000, 20), tmp_path)
    try:
        session = wait_for(lambda: session_in(out), 20, "the session directory")
        wait_for(lambda: len(steps(session)) >= 5, 60, "the first steps")
        tree = [p.pid for p in psutil.Process(tui.proc.pid).children(recursive=True)]
        assert daemon_pid(session) in tree and runner_pids(session)[0] in tree
        tui.send("q")
        tui.wait_text("they go on")  # the question offers detach too
        tui.send("s")
        rc = tui.wait(60)
    finally:
        tui.close()
    assert rc == 0, tui.text()[-3000:]
    assert "summary:" in tui.text()
    wait_for(lambda: gone(tree), 10, "every process of the session to exit")
    assert not [p for p in psutil.process_iter(["cmdline"])
                if str(session) in " ".join(p.info["cmdline"] or [])]
    assert store.read_meta(session)["status"] == "done"
    assert [e["reason"] for e in of_type(session, "finished")] == ["stopped"]
    assert (session / "summary.md").is_file()


def test_detach_then_attach_from_a_new_process_steers_the_run(tmp_path, inductor_cache, reaper):
    out = tmp_path / "sessions"
    tui = PtyTuimon(slow_args(out, inductor_cache, 100000, 20), tmp_path)
    try:
        session = wait_for(lambda: session_in(out), 20, "the session directory")
        wait_for(lambda: len(steps(session)) >= 5, 60, "the first steps")
        tui.send("q")
        tui.wait_text("they go on")
        tui.send("d")
        assert tui.wait(20) == 0
    finally:
        tui.close()
    assert "tuimon attach" in tui.text()
    daemon = daemon_pid(session)
    before = len(steps(session))
    wait_for(lambda: len(steps(session)) > before + 10, 20, "steps while detached")
    ls = subprocess.run([sys.executable, "-m", "tuimon", "ls", "--out", str(out)],
                        capture_output=True, text=True, timeout=30)
    assert re.search(rf"{session.name}\s+running\s+eager/fp32\s.*slow_steps\.py\s+{daemon}", ls.stdout)

    again = PtyTuimon(["attach", "--out", str(out)], tmp_path)  # latest running session
    try:
        wait_for(lambda: channel.request(session, "hello")["attached"] == 1, 20, "the viewer")
        again.wait_text("eager/fp32")  # the app is up (keys sent before it are flushed)
        again.wait_text(" steps")
        again.send(" ")  # pause, through the socket
        wait_for(lambda: channel.request(session, "states")["eager-fp32"] == "paused", 20, "pause")
        paused_at = len(steps(session))
        time.sleep(1.0)
        assert len(steps(session)) == paused_at
        assert [e["action"] for e in of_type(session, "control")] == ["pause"]
        again.send(" ")
        wait_for(lambda: len(steps(session)) > paused_at + 5, 20, "resume")
        again.send("q")
        again.wait_text("they go on")
        again.send("s")
        assert again.wait(60) == 0, again.text()[-3000:]
    finally:
        again.close()
    assert "summary:" in again.text()
    assert store.read_meta(session)["status"] == "done"
    assert steps(session) == list(range(len(steps(session))))  # contiguous through it all
    wait_for(lambda: gone([daemon, *runner_pids(session)]), 10, "everything to exit")


async def test_remote_source_keys_in_the_app_and_detach(tuimon, tmp_path, reaper):
    proc, session = tuimon(SLOW, "--modes", "eager", "--steps", "100000", "--set", "sleep_ms=20",
                           "--warmup", "0", "--interval", "0.5", "--detach")
    assert proc.returncode == 0 and "tuimon attach" in proc.stdout, proc.stderr
    source = RemoteSource(session)
    app = TuimonApp(source)
    async with app.run_test(size=(120, 32)) as pilot:
        async def until(predicate, what):
            deadline = time.monotonic() + 60
            while not predicate():
                assert time.monotonic() < deadline, f"timed out waiting for {what}"
                await pilot.pause(0.2)
                app.tick()

        await until(lambda: app.model.runs.get("eager-fp32") and app.model.runs["eager-fp32"].steps > 5,
                    "steps")
        await pilot.press("r")  # restart: a new run in the same panel, through the socket
        await until(lambda: app.model.panels == ["eager-fp32-2"]
                    and app.model.runs["eager-fp32-2"].steps > 3, "the restarted run")
        await pilot.press("q")
        await pilot.pause(0.3)
        assert app.screen.__class__.__name__ == "QuitScreen"
        await pilot.press("d")
        await until(lambda: not app.is_running, "the app to exit")
    assert source.detached and app.return_value == "detached"
    assert channel.request(session, "hello")["attached"] == 0
    assert channel.request(session, "states") == {"eager-fp32": "stopped", "eager-fp32-2": "running"}
    # A bad command is refused in one line; the daemon goes on.
    with pytest.raises(channel.CommandError, match="no run 'nope'"):
        channel.request(session, "pause", "nope")
    with pytest.raises(channel.CommandError, match="unknown command"):
        channel.request(session, "shutdown_host")
    assert channel.request(session, "add", Variant("eager", "amp")) == "eager-amp"
    channel.request(session, "close")
    wait_for(lambda: store.read_meta(session).get("status") == "done", 60, "the session to end")
    assert (session / "summary.md").is_file()


# ---- ls -------------------------------------------------------------------------------------
def test_ls_lists_the_sessions_with_their_state(tuimon, tmp_path, reaper):
    out = tmp_path / "sessions"
    out.mkdir()
    for n, status in enumerate(("done", "failed", "interrupted")):
        copy = out / f"20200101-00000{n}-tiny_mlp"
        shutil.copytree(DATA, copy)
        meta = store.read_meta(copy)
        store.write_json_atomic(copy / "meta.json", {**meta, "status": status})
    args = (SLOW, "--modes", "eager", "--steps", "100000", "--set", "sleep_ms=20", "--warmup", "0",
            "--detach")
    _, stale = tuimon(*args)
    _, running = tuimon(*args)
    killed = daemon_pid(stale)
    os.kill(killed, signal.SIGKILL)  # the supervisor dies without writing anything
    wait_for(lambda: gone([killed]), 10, "the killed daemon")

    proc, _ = tuimon("ls")
    assert proc.returncode == 0, proc.stderr
    rows = [line.split() for line in proc.stdout.splitlines()]
    assert rows[0] == ["SESSION", "STATE", "VARIANTS", "STARTED", "RECIPE", "PID", "VIEWERS"]
    states = {row[0]: row[1] for row in rows[1:]}
    assert states == {"20200101-000000-tiny_mlp": "done", "20200101-000001-tiny_mlp": "failed",
                      "20200101-000002-tiny_mlp": "interrupted", stale.name: "stale",
                      running.name: "running"}
    assert rows[-1][-2:] == [str(daemon_pid(running)), "0"] and rows[-1][2] == "eager/fp32"
    assert detach.resolve_session(None, str(out)) == running  # attach's default: latest running
    # The runner of the killed daemon read EOF on its control pipe and stopped by itself.
    wait_for(lambda: gone(runner_pids(stale)), 20, "the orphaned runner to stop")
    channel.request(running, "close")
    wait_for(lambda: store.read_meta(running).get("status") == "done", 60, "the running session to end")
    proc, _ = tuimon("ls")
    assert re.search(rf"{running.name}\s+done\s", proc.stdout)


# ---- shared-box safety ----------------------------------------------------------------------
class Recorder:
    def __init__(self) -> None:
        self.calls: list[tuple] = []

    def pause(self, run: str) -> None:
        self.calls.append(("pause", run))

    def states(self) -> dict:
        return {}


def test_a_peer_with_another_uid_is_refused(tmp_path):
    """The uid check on its own, with the peer's uid injected (no second user needed)."""
    tmp_path.chmod(0o700)
    target = Recorder()
    other = channel.Server(tmp_path, target, peer_uid=lambda conn: os.getuid() + 1)
    other.start()
    try:
        assert stat.S_IMODE((tmp_path / channel.SOCKET).stat().st_mode) == 0o600
        with pytest.raises(channel.CommandError, match=r"refused: uid \d+ does not own this session"):
            channel.request(tmp_path, "pause", "eager-fp32")
        assert target.calls == [] and other.refused == 1
    finally:
        other.close()
    same = channel.Server(tmp_path, target)  # the real SO_PEERCRED check, same uid: accepted
    same.start()
    try:
        assert channel.request(tmp_path, "pause", "eager-fp32") is None
        assert target.calls == [("pause", "eager-fp32")]
    finally:
        same.close()
    assert not (tmp_path / channel.SOCKET).exists()


PEER = """
import socket, sys
s = socket.socket(socket.AF_UNIX)
try:
    s.connect(sys.argv[1])
    s.sendall(b'{"cmd": "states"}\\n')
    print(s.recv(4096).decode().strip())
except OSError as exc:
    print(type(exc).__name__)
"""


@pytest.fixture
def public_dir():
    """A directory anyone may traverse (pytest's own tmp root is 0700, which would hide what the
    session directory's bits do)."""
    path = Path(tempfile.mkdtemp(prefix="tuimon-test-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.mark.skipif(os.getuid() != 0, reason="needs root to run a process as another uid")
def test_another_user_cannot_reach_a_session(tuimon, public_dir, tmp_path, reaper):
    """A real process as uid 65534: the 0700 session directory keeps it out; and where it can
    reach a socket (a 0666 one in an open directory), SO_PEERCRED still refuses it."""
    python = shutil.which("python3", path="/usr/bin:/bin") or sys.executable

    def as_nobody(sock: Path) -> str:
        return subprocess.run([python, "-I", "-c", PEER, str(sock)], capture_output=True, text=True,
                              timeout=30, user=65534, group=65534, extra_groups=[]).stdout.strip()

    out = public_dir / "sessions"
    proc, _ = tuimon(SLOW, "--modes", "eager", "--steps", "100000", "--set", "sleep_ms=20",
                     "--warmup", "0", "--detach", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    session = session_in(out)
    try:
        assert stat.S_IMODE(session.stat().st_mode) == 0o700
        sock = session / channel.SOCKET
        assert stat.S_ISSOCK(sock.stat().st_mode) and stat.S_IMODE(sock.stat().st_mode) == 0o600
        assert as_nobody(sock) == "PermissionError"  # the directory's bits
        assert as_nobody(session / "events.jsonl") == "PermissionError"
        assert "running" in channel.request(session, "states").values()  # its owner gets in
    finally:
        channel.request(session, "close")
    wait_for(lambda: store.read_meta(session).get("status") == "done", 60, "the session to end")

    open_dir = public_dir / "open"
    open_dir.mkdir()
    open_dir.chmod(0o777)
    server = channel.Server(open_dir, Recorder())
    server.start()
    try:
        (open_dir / channel.SOCKET).chmod(0o666)  # as if the bits were wrong: the uid check holds
        reply = json.loads(as_nobody(open_dir / channel.SOCKET))
        assert reply == {"ok": False, "error": "refused: uid 65534 does not own this session "
                         f"(owner uid {os.getuid()})"}
        assert server.refused == 1
    finally:
        server.close()


def test_long_session_paths_still_get_a_socket(tmp_path):
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    deep.mkdir(parents=True)
    assert len(str(deep / channel.SOCKET)) > 108
    server = channel.Server(deep, Recorder())
    server.start()
    try:
        assert channel.request(deep, "hello")["session"] == str(deep)
        assert channel.alive(deep)
    finally:
        server.close()
    assert not channel.alive(deep)
    with pytest.raises(channel.ChannelError, match="no tuimon supervisor listens"):
        channel.Client(deep)


def test_the_daemon_and_the_client_side_import_neither_torch_nor_textual():
    code = ("import tuimon.control.daemon, tuimon.control.channel, tuimon.sessiondir.listing, tuimon.detach;"
            "tuimon.detach.attach_parser(); tuimon.detach.ls_parser(); import sys;"
            "print(' '.join(sys.modules))")
    loaded = set(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                check=True).stdout.split())
    assert "torch" not in loaded and "textual" not in loaded
