"""The detached side of the CLI: a session owned by a daemon, ``tuimon attach`` and ``tuimon ls``.

``tuimon RECIPE`` on a terminal (and ``tuimon RECIPE --detach`` anywhere) hands the runs to a
daemon (session/daemon.py) and, with the TUI, opens it as a client (ui/sources.py
RemoteSource). The TUI may then die or detach; the runs go on. ``tuimon attach`` opens the TUI
on a session again: live with working keys while its daemon answers, otherwise read-only like
replay, with a note saying why. ``tuimon ls`` lists the sessions under --out with their state.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from types import SimpleNamespace

from tuimon.cli import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, Parser, UsageError, fps_arg
from tuimon.session import listing, store

DEFAULT_OUT = "tuimon-sessions"


def attach_parser() -> Parser:
    p = Parser(prog="tuimon attach",
               description="Open the live TUI again on a session whose runs go on in the background "
               "(full history, working keys). A session that has ended opens read-only.")
    p.add_argument("session", nargs="?",
                   help="a session directory (default: the latest running session under --out, "
                   "else the latest one)")
    p.add_argument("--out", default=DEFAULT_OUT, metavar="DIR",
                   help="where to look for the latest session (default: ./tuimon-sessions)")
    p.add_argument("--fps", type=fps_arg, default=4.0, help="redraws per second (default: 4)")
    return p


def ls_parser() -> Parser:
    p = Parser(prog="tuimon ls",
               description="List the sessions under --out: state (running, done, failed, "
               "interrupted, stale), variants, start time, recipe, the supervisor's pid and how "
               "many TUIs are attached.")
    p.add_argument("--out", default=DEFAULT_OUT, metavar="DIR",
                   help="the sessions directory (default: ./tuimon-sessions)")
    return p


# ---- tuimon RECIPE, detached ------------------------------------------------------------------
def run_detached(path: Path, plan, *, fps: float, tui: bool, console):
    """Start the daemon; with ``tui``, open the TUI on it. Returns an exit code when the CLI is
    done here (detached: the daemon owns the session now), else ``(status, supervisor-like,
    meta)`` once the session has ended, for the CLI to print the summary as in headless mode."""
    from tuimon.session import daemon

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
    from tuimon.session.channel import ChannelError
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


# ---- tuimon attach ---------------------------------------------------------------------------
def resolve_session(session: str | None, out: str) -> Path:
    if session is not None:
        if (why := store.check_session(session)) is not None:
            raise UsageError(why)
        return Path(session)
    if not Path(out).is_dir():
        raise UsageError(f"no tuimon sessions in {out} (no such directory)")
    latest = listing.latest(out)
    if latest is None:
        raise UsageError(f"no tuimon session in {out}")
    return latest.path


def open_source(path: Path):
    """(RemoteSource, None) when the session's daemon answers; otherwise (ReplaySource, the
    note that says why it is read-only)."""
    from tuimon.session.channel import ChannelError, CommandError
    from tuimon.ui.sources import RemoteSource, ReplaySource

    try:
        return RemoteSource(path), None
    except (ChannelError, CommandError):
        pass
    meta = store.read_meta(path)
    state = listing.state_of(meta)
    if state == listing.RUNNING:
        note = (f"this session runs in pid {(meta.get('owner') or {}).get('pid')} without a control "
                "channel (headless): read-only, following it")
    elif state == listing.STALE:
        note = ("this session's supervisor is gone without finishing (killed?): read-only, "
                "showing what was recorded")
    else:
        note = f"this session has ended ({state}): read-only, as replay"
    return ReplaySource(path), note


def attach_command(args: argparse.Namespace) -> int:
    from rich.console import Console

    from tuimon.ui.app import TuimonApp

    path = resolve_session(args.session, args.out)
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise UsageError("attach needs an interactive terminal (use 'tuimon ls' or "
                         "'tuimon summary' for text)")
    source, note = open_source(path)
    TuimonApp(source, fps=args.fps, note=note).run()
    console = Console()
    if source.read_only:
        return EXIT_OK
    if not source.closed:
        if not source.detached:
            source.detach()
        print_detached(console, path, source.pid)
        return EXIT_OK
    from tuimon.headless import print_summary
    from tuimon.session import export

    _, _, summary = export.load(path)
    print_summary(console, summary)
    console.print(f"summary: {path / 'summary.md'}", highlight=False)
    status = source.status
    return EXIT_INTERRUPTED if status == "interrupted" else EXIT_FAILED if status == "failed" else EXIT_OK


# ---- tuimon ls -------------------------------------------------------------------------------
COLUMNS = ("session", "state", "variants", "started", "recipe", "pid", "viewers")


def viewers(info: listing.SessionInfo) -> str:
    """How many TUIs are attached to a running session's daemon (it counts them); blank for a
    session that has none (headless, or ended)."""
    from tuimon.session.channel import ChannelError, CommandError, request

    if info.state != listing.RUNNING or (info.meta.get("owner") or {}).get("kind") != "daemon":
        return ""
    try:
        return str(request(info.path, "hello", timeout=1.0)["attached"])
    except (ChannelError, CommandError, OSError, ValueError, KeyError, TypeError):
        return "?"


def ls_command(args: argparse.Namespace) -> int:
    out = Path(args.out)
    if not out.is_dir():
        raise UsageError(f"no such directory: {out}")
    found = listing.sessions(out)
    if not found:
        print(f"no tuimon sessions in {out}")
        return EXIT_OK
    rows = [[s.path.name, s.state, s.variants or "–", s.started, s.recipe,
             str(s.pid) if s.state == listing.RUNNING else "", viewers(s)] for s in found]
    if sys.stdout.isatty():
        from rich.console import Console
        from rich.table import Table

        colors = {"running": "green", "done": "blue", "failed": "red", "interrupted": "yellow",
                  "stale": "magenta"}
        table = Table(box=None, header_style="bold", pad_edge=False)
        for name in COLUMNS:
            table.add_column(name.upper(), no_wrap=name in ("session", "state", "started"))
        for row in rows:
            row[1] = f"[{colors.get(row[1], 'white')}]{row[1]}[/]"
            table.add_row(*row)
        Console().print(table)
        return EXIT_OK
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(COLUMNS)]
    for row in [[c.upper() for c in COLUMNS], *rows]:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())
    return EXIT_OK
