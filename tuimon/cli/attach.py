"""``tuimon attach [SESSION_DIR]``: the TUI on a session again, live with working keys while its
daemon answers, otherwise read-only like replay, with a note saying why."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tuimon.cli.args import DEFAULT_OUT, Parser, UsageError, fps_arg
from tuimon.cli.detached import print_detached
from tuimon.exit_codes import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK
from tuimon.sessiondir import listing, store
from tuimon.ui.sources import open_source

__all__ = ["attach_command", "attach_parser", "open_source", "resolve_session"]


def attach_parser() -> Parser:
    p = Parser(prog="tuimon attach",
               description="Open the live TUI again on a session whose runs go on in the background "
               "(full history, working keys). A session that has ended opens read-only.")
    p.add_argument("session", nargs="*",
                   help="a session directory (default: the latest running session under --out, "
                   "else the latest one); several: the sessions of one torchrun job's nodes, "
                   "followed read-only as one job; a Slurm job's directory (slurm-JOB-STEP/): "
                   "its nodes' sessions, the same way")
    p.add_argument("--out", default=DEFAULT_OUT, metavar="DIR",
                   help="where to look for the latest session (default: ./tuimon-sessions)")
    p.add_argument("--fps", type=fps_arg, default=4.0, help="redraws per second (default: 4)")
    return p


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


def attach_command(args: argparse.Namespace) -> int:
    from rich.console import Console

    from tuimon.ui.app import TuimonApp

    if args.session:  # a Slurm job's directory: its nodes' sessions
        from tuimon.cli.summary import job_sessions

        args.session = [str(p) for p in job_sessions(args.session)[0]]
    if len(args.session) > 1:  # one job's nodes: followed read-only, as one job
        from tuimon.cli.replay import job_source

        source, note = job_source(args.session, "attach")
        if not (sys.stdin.isatty() and sys.stdout.isatty()):
            raise UsageError("attach needs an interactive terminal (use 'tuimon summary' for text)")
        TuimonApp(source, fps=args.fps, note=note).run()
        return EXIT_OK
    path = resolve_session(args.session[0] if args.session else None, args.out)
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
    from tuimon.analysis import load_session
    from tuimon.headless import print_summary

    _, _, summary = load_session(path)
    print_summary(console, summary)
    console.print(f"summary: {path / 'summary.md'}", highlight=False)
    status = source.status
    return EXIT_INTERRUPTED if status == "interrupted" else EXIT_FAILED if status == "failed" else EXIT_OK
