"""``tuimon replay SESSION_DIR``: the TUI on a recorded (or still running) session, read-only."""

from __future__ import annotations

import argparse
import sys

from tuimon.cli.args import Parser, UsageError, fps_arg
from tuimon.exit_codes import EXIT_OK


def replay_parser() -> Parser:
    p = Parser(prog="tuimon replay",
               description="Open the TUI on a recorded (or still running) session, read-only.")
    p.add_argument("session", help="a session directory (contains events.jsonl)")
    p.add_argument("--fps", type=fps_arg, default=4.0, help="redraws per second (default: 4)")
    return p


def replay_command(args: argparse.Namespace) -> int:
    from tuimon.session import store
    from tuimon.ui.app import TuimonApp
    from tuimon.ui.sources import ReplaySource

    if (why := store.check_session(args.session)) is not None:
        raise UsageError(why)
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise UsageError("replay needs an interactive terminal (use 'tuimon summary' for text)")
    TuimonApp(ReplaySource(args.session), fps=args.fps).run()
    return EXIT_OK
