"""``python -m tuimon.control.daemon SESSION_DIR``: the detached owner of a session's runs.

Process model. With the TUI (an interactive terminal, not --headless), the CLI creates the
session directory, writes ``meta.json`` and ``plan.json`` (the Plan, see ``plan_to_dict``) and
starts this daemon with ``start_new_session=True``: its own session and process group, no
controlling terminal, stdin from /dev/null, stdout and stderr into ``SESSION/daemon.log``. The
daemon runs the Supervisor on its main thread (which starts the runner children, samples the
probes and writes ``events.jsonl``), and serves the control socket ``SESSION/control.sock``
(control/channel.py). The TUI is only a client: it follows ``events.jsonl`` from its start and
sends keys as commands over the socket. So a SIGHUP (dropped SSH connection, closed tmux
pane), a SIGKILL or a crash of the TUI ends the TUI alone: the runs go on, the store keeps
being written, and the daemon writes ``summary.md`` / ``summary.json`` / ``steps.csv`` and the
final ``meta.json`` status when the session ends, then exits. The runners stay the daemon's
children (each in its own process group, see control/child.py); if the daemon itself is killed,
each runner reads EOF on its control pipe and stops at its next step boundary.

When the session ends (what keep_open means here). The supervisor runs with keep_open=True,
so a viewer can still add or restart runs after the plan's runs are over. It is closed:

- when a client sends ``close`` (the TUI's quit → "stop the runs"), which stops every run;
- when every run has ended (done, failed or stopped, nothing queued) and no viewer is
  attached (a client that sent ``attach`` and still holds its connection), provided a viewer
  attached once or ``GRACE_S`` passed since the start (so a TUI that is still starting does
  not find the session already over);
- on SIGTERM or SIGINT: the runs are stopped as on Ctrl-C, status ``interrupted``;
- when the store cannot be written (disk full, ...): the supervisor stops the runs itself. The
  daemon writes what summary it can, says ``tuimon: error: ...`` in its log, tells attached
  viewers (``hello`` carries ``error``; it waits up to ``TELL_S`` for one to ask) and exits
  with code 3.

SIGHUP is ignored. Whatever ends it, the summary is written from the store before the socket
is removed and the daemon exits, so a client that waits for the socket to close (RemoteSource
close) finds the summary there.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import signal
import subprocess
import sys
import threading
import time
import traceback
from pathlib import Path

from tuimon.control import channel
from tuimon.control.supervisor import DONE, FAILED, STOPPED, Plan, Supervisor, interrupt
from tuimon.exit_codes import EXIT_STORE
from tuimon.report import export
from tuimon.sessiondir import listing, store
from tuimon.sessiondir.store import SessionStore, StoreWriteError, write_json_atomic
from tuimon.settings import RunSettings
from tuimon.variants import Variant

PLAN = "plan.json"
LOG = "daemon.log"
GRACE_S = 10.0  # no viewer ever attached: how long a finished session waits for one
TELL_S = 5.0  # a store failure: how long the daemon waits for an attached viewer to hear of it
ENDED = (DONE, FAILED, STOPPED)


class DaemonError(Exception):
    """The daemon did not come up; one line (its log has the rest)."""


# ---- the plan, as a file --------------------------------------------------------------------
def plan_to_dict(plan: Plan) -> dict:
    """Every Plan field; Paths as strings, Variants as {mode, precision, axes}, the runs'
    settings in their own form (tuimon/settings.py)."""
    out = {}
    for f in dataclasses.fields(plan):
        value = getattr(plan, f.name)
        if isinstance(value, RunSettings):
            out[f.name] = value.to_dict()
            continue
        if isinstance(value, list):
            value = [channel.encode_arg(v) for v in value]
        out[f.name] = channel.encode_arg(value)
    return out


def plan_from_dict(data: dict) -> Plan:
    kwargs = {}
    for f in dataclasses.fields(Plan):
        if f.name not in data:
            continue
        value = data[f.name]
        if f.name == "variants":
            value = [Variant.from_fields(v) for v in value]
        elif f.name == "settings":
            value = RunSettings.from_dict(value)
        elif value is not None and "Path" in str(f.type):
            value = Path(value)
        kwargs[f.name] = value
    return Plan(**kwargs)


# ---- the CLI's side -------------------------------------------------------------------------
def spawn(path: Path, plan: Plan) -> subprocess.Popen:
    """Write plan.json and start the daemon, detached from this process and its terminal."""
    path = Path(path).resolve()
    write_json_atomic(path / PLAN, plan_to_dict(plan))
    with open(path / LOG, "ab") as log:
        return subprocess.Popen([sys.executable, "-m", "tuimon.control.daemon", str(path)],
                                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True, close_fds=True)


def wait_ready(path: Path, proc: subprocess.Popen, timeout: float = 30.0) -> None:
    """Until the daemon answers on its socket; DaemonError if it exits or never does."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if channel.alive(path, timeout=2.0):
            return
        if proc.poll() is not None:
            tail = _log_tail(Path(path) / LOG)
            raise DaemonError(f"the session supervisor exited with code {proc.returncode}"
                              + (f": {tail}" if tail else f" (see {Path(path) / LOG})"))
        time.sleep(0.05)
    raise DaemonError(f"the session supervisor did not answer within {timeout:.0f} s "
                      f"(see {Path(path) / LOG})")


def _log_tail(path: Path) -> str:
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").strip().splitlines()
    except OSError:
        return ""
    return lines[-1][:300] if lines else ""


# ---- the daemon ---------------------------------------------------------------------------
class Daemon:
    def __init__(self, path: Path, plan: Plan, grace_s: float = GRACE_S, meta: dict | None = None) -> None:
        self.path = Path(path)
        self.grace_s = grace_s
        self.store = SessionStore(self.path)
        if meta is not None:
            self.store.write_meta(meta)  # through the store: it rewrites it if the dir is deleted
        self.supervisor = Supervisor(self.store, plan)
        self.server = channel.Server(self.path, self.supervisor)
        self._over = threading.Event()

    def run(self) -> str:
        self.server.start()
        threading.Thread(target=self._watch, name="tuimon-daemon-watch", daemon=True).start()
        try:
            status = self.supervisor.run(keep_open=True)
        except KeyboardInterrupt:  # SIGTERM just after the supervisor's loop had ended
            status = "interrupted"
        except Exception:  # noqa: BLE001 - a bug here: the children are stopped, keep the data
            traceback.print_exc()
            status = "failed"
        finally:
            self._over.set()
            stored = self.store.close(read_back=True)
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, signal.SIG_IGN)  # the summary is written next
        error = self.supervisor.store_error
        try:
            export.finish(self.path, status, stored=stored, unwritten=self.store.unwritten, error=error)
            if error:
                self._tell_viewers()
        except StoreWriteError as exc:  # the runs ended; only the summary files did not fit
            print(f"tuimon daemon: {exc}; events.jsonl holds everything measured", file=sys.stderr)
            status = "failed"
        finally:
            self.server.close()
        return status

    def _tell_viewers(self) -> None:
        """Keep the socket up until an attached TUI has read the store error (hello), or TELL_S."""
        deadline = time.monotonic() + TELL_S
        while self.server.attached and not self.server.error_told and time.monotonic() < deadline:
            time.sleep(0.05)

    def _watch(self) -> None:
        """Close the session once every run has ended and nobody is watching."""
        started = time.monotonic()
        while not self._over.wait(0.2):
            states = self.supervisor.states()
            if self.supervisor.interrupted:  # SIGTERM / SIGINT: the loop is winding down itself
                return
            if not states or any(s not in ENDED for s in states.values()) or self.server.attached:
                continue
            if self.server.ever_attached or time.monotonic() - started >= self.grace_s:
                print(f"{time.strftime('%H:%M:%S')} every run ended and no viewer is attached: "
                      "closing the session", flush=True)
                self.supervisor.close()
                return


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print("usage: python -m tuimon.control.daemon SESSION_DIR", file=sys.stderr)
        return 2
    path = Path(argv[0])
    os.umask(0o077)  # everything this process creates is the owner's alone
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        plan = plan_from_dict(json.loads((path / PLAN).read_text(encoding="utf-8")))
        meta = store.read_meta(path)
        meta["owner"] = listing.owner_info("daemon")
        daemon = Daemon(path, plan, meta=meta)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        print(f"tuimon daemon: cannot start the session in {path}: {exc}", file=sys.stderr)
        return 2
    print(f"{time.strftime('%H:%M:%S')} tuimon daemon pid {os.getpid()} serving {path}", flush=True)
    signal.signal(signal.SIGTERM, interrupt)
    status = daemon.run()
    if daemon.supervisor.store_error:
        say(f"tuimon: error: {daemon.supervisor.store_error} — runs stopped; what was written so "
            "far is kept")
        return EXIT_STORE
    say(f"{time.strftime('%H:%M:%S')} session ended: {status}")
    return 0


def say(line: str) -> None:
    """A line in daemon.log, which may be on the disk that is full."""
    with contextlib.suppress(OSError):
        print(line, flush=True)


if __name__ == "__main__":
    raise SystemExit(main())
