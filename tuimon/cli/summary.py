"""``tuimon summary SESSION_DIR``: recompute a session's summary from its store, rewrite its
exports and print one of them."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tuimon.cli.args import Parser, UsageError, horizon_arg, limited
from tuimon.cli.warm import add_start_flag
from tuimon.exit_codes import EXIT_OK


def summary_parser() -> Parser:
    p = Parser(prog="tuimon summary",
               description="Recompute a session's summary and verdict from its store and rewrite "
               "its exports.")
    p.add_argument("session", nargs="+",
                   help="a session directory (contains events.jsonl); several: the sessions of one "
                   "torchrun job's nodes, read as one job (written to the first one as "
                   "job-summary.md, job-summary.json and job-steps.csv)")
    p.add_argument("--format", choices=("md", "json", "csv"), default="md",
                   help="what to print on stdout (all three files are rewritten) (default: md)")
    p.add_argument("--force", action="store_true",
                   help="summarize the events of a session whose meta.json is missing or unreadable")
    p.add_argument("--horizon", type=horizon_arg, metavar="STEPS|TIME",
                   help="weigh the verdict over this training run (50000 steps, or 2h with "
                   "eager/fp32) instead of the session's own --horizon")
    add_start_flag(p)
    p.add_argument("--loss-tolerance", type=limited("loss-tolerance"), metavar="SHARE",
                   help="the verdict's loss tolerance instead of the session's own")
    return p


def summary_command(args: argparse.Namespace) -> int:
    from tuimon.analysis import load_session
    from tuimon.report import export
    from tuimon.sessiondir import store
    from tuimon.sessiondir.merge import MergeError

    for session in args.session:
        if (why := store.check_session(session, need_meta=not args.force)) is not None:
            raise UsageError(why)
    first = args.session[0]
    formats = export.JOB_FORMATS if len(args.session) > 1 else export.FORMATS
    try:
        answer = {"horizon": args.horizon, "loss_tolerance": args.loss_tolerance, "start": args.start}
        meta, evs, summary = load_session(args.session, answer=answer)
        written = export.write(Path(first), meta, evs, summary, formats=formats)
    except MergeError as exc:
        raise UsageError(str(exc)) from None
    except OSError as exc:
        raise UsageError(f"cannot write the summary into {first}: {exc.strerror or exc}") from None
    sys.stdout.write(written[args.format].read_text(encoding="utf-8"))
    for warning in read_warnings(first, meta, summary.unreadable_lines):
        print(f"tuimon: warning: {warning}", file=sys.stderr)
    return EXIT_OK


def read_warnings(path, meta: dict, unreadable: int) -> list[str]:
    """What a reader of a damaged session should know: lines skipped, meta.json lost."""
    from tuimon.sessiondir import store

    found = [store.unreadable_note(unreadable)] if unreadable else []
    if not meta:
        what = "missing" if not (Path(path) / store.META).exists() else "unreadable"
        found.append(f"meta.json {what}: the summary lacks the command, host and settings")
    return found
