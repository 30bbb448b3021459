"""``tuimon RECIPE`` on a terminal (or with --detach): the runs go to a daemon
(control/daemon.py) and the TUI, if any, is its client (ui/sources.py RemoteSource). The TUI
may then die or detach; the runs go on, and ``tuimon attach`` opens them again."""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

from tuimon.exit_codes import EXIT_FAILED, EXIT_OK
from tuimon.sessiondir import store


def run_detached(path: Path, plan, *, fps: float, tui: bool, console):
    """Start the daemon; with ``tui``, open the TUI on it. Returns an exit code when the CLI is
    done here (detached: the daemon owns the session now), else ``(status, supervisor-like,
    meta)`` once the session has ended, for the CLI to print the summary as in headless mode."""
    from tuimon.control import daemon

    proc = daemon.spawn(path, plan)
    try:
        daemon.wait_ready(path, proc)
    except daemon.DaemonError as exc:
        print(f"tuimon: error: {exc}", file=sys.stderr)
        return EXIT_FAILED
    if not tui:
        console.print(f"session: {path}\nrunning in the background (supervisor pid {proc.pid}); "
                      f"watch it with: tuimon attach {path}", highlight=False, soft_wrap=True)
        return EXIT_OK
    from tuimon.control.channel import ChannelError
    from tuimon.ui.app import TuimonApp
    from tuimon.ui.sources import RemoteSource

    try:
        source = RemoteSource(path)
    except ChannelError as exc:
        print(f"tuimon: error: {exc}", file=sys.stderr)
        return EXIT_FAILED
    TuimonApp(source, fps=fps).run()
    if not source.closed:
        if not source.detached:
            source.detach()  # the app ended some other way (ctrl+q): the runs go on
        if proc.poll() is None:
            print_detached(console, path, proc.pid)
            return EXIT_OK
    try:
        proc.wait(timeout=60)  # it has written the summary and is exiting
    except Exception:  # noqa: BLE001 - still going after 60 s: leave it, say so
        print_detached(console, path, proc.pid)
        return EXIT_OK
    meta = store.read_meta(path)
    status = meta.get("status") if meta.get("status") not in (None, "running") else "interrupted"
    error = source.error or meta.get("error")  # the daemon could not write the store
    return status, SimpleNamespace(build_failure=build_failure(path), store_error=error), meta


def build_failure(path: Path) -> dict | None:
    """The first build-stage failure of the session, as the supervisor reports it."""
    evs, _ = store.read_events(path)
    return next((e for e in evs if e["type"] == "failed" and e.get("stage") == "build"), None)


def print_detached(console, path: Path, pid: int | None) -> None:
    path = Path(path).resolve()
    console.print(f"detached: the runs go on (supervisor pid {pid}; its log: {path / 'daemon.log'})\n"
                  f"  attach again:  tuimon attach {path}\n"
                  f"  list sessions: tuimon ls --out {path.parent}", highlight=False, soft_wrap=True)
