"""``tuimon replay SESSION_DIR``: the TUI on a recorded (or still running) session, read-only."""

from __future__ import annotations

import argparse
import sys

from tuimon.cli.args import Parser, UsageError, fps_arg
from tuimon.exit_codes import EXIT_OK


def replay_parser() -> Parser:
    p = Parser(prog="tuimon replay",
               description="Open the TUI on a recorded (or still running) session, read-only.")
    p.add_argument("session", nargs="+",
                   help="a session directory (contains events.jsonl); several: the sessions of one "
                   "torchrun job's nodes, shown as one job; a Slurm job's directory "
                   "(slurm-JOB-STEP/): its nodes' sessions, as one job")
    p.add_argument("--fps", type=fps_arg, default=4.0, help="redraws per second (default: 4)")
    return p


def replay_command(args: argparse.Namespace) -> int:
    from tuimon.ui.app import TuimonApp

    source, note = job_source(args.session, "replay")
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise UsageError("replay needs an interactive terminal (use 'tuimon summary' for text)")
    TuimonApp(source, fps=args.fps, note=note).run()
    return EXIT_OK


def job_source(sessions: list[str], command: str):
    """A read-only source of one session, or of several nodes' sessions of one job (checked
    here: UsageError when they are not one); and the note the app opens with."""
    from tuimon.cli.summary import job_sessions
    from tuimon.sessiondir import merge, store
    from tuimon.ui.sources import JobSource, ReplaySource

    sessions = [str(p) for p in job_sessions(sessions)[0]]
    for session in sessions:
        if (why := store.check_session(session)) is not None:
            raise UsageError(why)
    if len(sessions) == 1:
        return ReplaySource(sessions[0]), None
    try:
        merge.load(sessions)
    except merge.MergeError as exc:
        raise UsageError(str(exc)) from None
    note = (f"one torchrun job over {len(sessions)} nodes' sessions, read-only ({command}); "
            "steer each node from its own tuimon")
    return JobSource(sessions), note
