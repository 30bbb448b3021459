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
                   "job-summary.md, job-summary.json and job-steps.csv); a Slurm job's directory "
                   "(slurm-JOB-STEP/, one session a node): the whole job, written into it")
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

    sessions, target = job_sessions(args.session)
    for session in sessions:
        if (why := store.check_session(session, need_meta=not args.force)) is not None:
            raise UsageError(why)
    formats = export.JOB_FORMATS if len(sessions) > 1 else export.FORMATS
    try:
        answer = {"horizon": args.horizon, "loss_tolerance": args.loss_tolerance, "start": args.start}
        meta, evs, summary = load_session(sessions, answer=answer)
        written = export.write(target, meta, evs, summary, formats=formats)
    except MergeError as exc:
        raise UsageError(str(exc)) from None
    except OSError as exc:
        raise UsageError(f"cannot write the summary into {target}: {exc.strerror or exc}") from None
    sys.stdout.write(written[args.format].read_text(encoding="utf-8"))
    for warning in read_warnings(sessions[0], meta, summary.unreadable_lines):
        print(f"tuimon: warning: {warning}", file=sys.stderr)
    return EXIT_OK


def job_sessions(paths: list[str]) -> tuple[list[Path], Path]:
    """The sessions to read as one and where the job's files go (sessiondir/merge.py's expand:
    a Slurm job's directory is its nodes' sessions); a job with a node missing: UsageError."""
    from tuimon.sessiondir import merge

    try:
        return merge.expand(paths)
    except merge.MergeError as exc:
        raise UsageError(str(exc)) from None
    except OSError as exc:
        raise UsageError(f"cannot read {paths[0]}: {exc.strerror or exc}") from None


def read_warnings(path, meta: dict, unreadable: int) -> list[str]:
    """What a reader of a damaged or unfinished session should know: lines skipped, meta.json
    lost, a job's nodes still running."""
    from tuimon.sessiondir import store

    found = [store.unreadable_note(unreadable)] if unreadable else []
    if not meta:
        what = "missing" if not (Path(path) / store.META).exists() else "unreadable"
        found.append(f"meta.json {what}: the summary lacks the command, host and settings")
    running = [n for n in meta.get("nodes", []) if n.get("status") == "running"]
    if running:
        which = ", ".join(Path(n["session"]).name for n in running)
        found.append(f"{len(running)} of {len(meta['nodes'])} nodes still running ({which}): the "
                     "job's figures are those recorded so far")
    return found
