"""``tuimon report SESSION [--png]``: SESSION/report.html, one self-contained page (the verdict,
the table, the figures inline, the Why findings), and with --png each figure as PNG and SVG in
SESSION/report-figures/. One line says what was written; bad input is one line and exit 2,
matplotlib missing one line (how to install it) and exit 1, never a traceback."""

from __future__ import annotations

import argparse
import sys

from tuimon.cli.args import Parser, UsageError
from tuimon.exit_codes import EXIT_FAILED, EXIT_OK
from tuimon.fmt import fmt_bytes


def report_parser() -> Parser:
    p = Parser(prog="tuimon report",
               description="Write SESSION/report.html: one self-contained HTML file (the verdict and "
               "the table, step time, distributions, cumulative training time and break-even, phases, "
               "compiles, the Why findings), its figures inline; nothing is fetched, it opens offline.")
    p.add_argument("session", nargs="+",
                   help="a session directory (contains events.jsonl); several: the sessions of one "
                   "torchrun job's nodes, read as one job (its page written into the first one); "
                   "a Slurm job's directory (slurm-JOB-STEP/): the whole job, its page written "
                   "into it")
    p.add_argument("--png", action="store_true",
                   help="also write each figure as PNG and SVG into SESSION/report-figures/ "
                   "(for a blog post or a pull request)")
    p.add_argument("--force", action="store_true",
                   help="report on the events of a session whose meta.json is missing or unreadable")
    return p


def report_command(args: argparse.Namespace) -> int:
    from tuimon.cli.summary import job_sessions
    from tuimon.sessiondir import store

    sessions, target = job_sessions(args.session)
    for session in sessions:
        if (why := store.check_session(session, need_meta=not args.force)) is not None:
            raise UsageError(why)
    from tuimon.report.html import canvas, page

    try:  # a MergeError (not one job) is a ValueError: one line too
        written = page.write(target, png=args.png, sessions=sessions)
    except canvas.Missing as exc:
        print(f"tuimon: error: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except OSError as exc:
        raise UsageError(f"cannot write the report into {target}: {exc.strerror or exc}") from None
    except ValueError as exc:  # a session whose events cannot be summarized
        raise UsageError(f"cannot read the session {target}: {exc}") from None
    print(done_line(written))
    return EXIT_OK


def done_line(written) -> str:
    """'wrote S/report.html (120.4 KiB, one file: opens offline)[; N figures as PNG and SVG in
    S/report-figures/][ — partial: ...]'"""
    line = f"tuimon: wrote {written.html} ({fmt_bytes(written.bytes)}, one file: opens offline)"
    if written.figures:
        folder = written.figures[0].parent
        line += f"; {len(written.figures) // 2} figures as PNG and SVG in {folder}/"
    if written.partial:
        why = "the session never ended" if written.stale else "the session is still running"
        line += f" — partial: {why}"
    return line
