"""``tuimon export SESSION --trace FILE.json --tensorboard DIR``: a session in the tools people
already read runs in: one Chrome trace-event / Perfetto timeline (report/trace.py), and a
TensorBoard run per run of the session (report/tensorboard.py, with tensorboardX, an optional
extra). One line says what was written; bad input is one line and exit 2; tensorboardX missing
one line (how to install it) and exit 1; never a traceback. Nothing the user already has is
replaced without --overwrite."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from tuimon.cli.args import Parser, UsageError
from tuimon.exit_codes import EXIT_FAILED, EXIT_OK
from tuimon.fmt import fmt_bytes


def export_parser() -> Parser:
    p = Parser(prog="tuimon export",
               description="Write a session in other tools' formats: --trace, one timeline for "
               "ui.perfetto.dev or chrome://tracing; --tensorboard, a TensorBoard run per run. "
               "Both read the session a line at a time; the session itself is left as it is.")
    p.add_argument("session", help="a session directory (contains events.jsonl)")
    p.add_argument("--trace", metavar="FILE.json",
                   help="the whole session as one Chrome trace-event timeline: each run a process, "
                   "its phases and turns, steps with their parts, compiles with theirs, recompiles, "
                   "graph breaks, captures, warnings, CPU / RSS / GPU counters")
    p.add_argument("--tensorboard", metavar="DIR",
                   help="each run as DIR/<run>/: step time, throughput, loss, each phase's ms, compile "
                   "seconds per step, the verdict and summary as text (needs tensorboardX: "
                   "pip install 'tuimon[tensorboard]')")
    p.add_argument("--overwrite", action="store_true",
                   help="replace an existing FILE.json, and the event files of DIR's runs' "
                   "directories that an earlier export wrote")
    p.add_argument("--force", action="store_true",
                   help="export the events of a session whose meta.json is missing or unreadable")
    return p


def export_command(args: argparse.Namespace) -> int:
    from tuimon.sessiondir import store

    if not (args.trace or args.tensorboard):
        raise UsageError("say what to write: --trace FILE.json and/or --tensorboard DIR")
    if (why := store.check_session(args.session, need_meta=not args.force)) is not None:
        raise UsageError(why)
    trace = _trace_target(args.trace, args.overwrite) if args.trace else None
    board = _board_target(args.tensorboard, args.overwrite) if args.tensorboard else None
    if trace is not None:
        _write_trace(args.session, trace)
    if board is not None:
        return _write_board(args.session, board, args.overwrite)
    return EXIT_OK


def _trace_target(path: str, overwrite: bool) -> Path:
    target = Path(path)
    if target.is_dir():
        raise UsageError(f"--trace wants a file, and {path} is a directory")
    if not target.parent.is_dir():
        raise UsageError(f"--trace {path}: no such directory {target.parent}")
    if target.exists() and not overwrite:
        raise UsageError(f"--trace {path} exists: --overwrite replaces it")
    return target


def _board_target(path: str, overwrite: bool) -> Path:
    target = Path(path)
    if target.exists() and not target.is_dir():
        raise UsageError(f"--tensorboard wants a directory, and {path} is a file")
    if not target.exists() and not target.parent.is_dir():
        raise UsageError(f"--tensorboard {path}: no such directory {target.parent}")
    if not overwrite:
        from tuimon.report import tensorboard

        try:
            tensorboard.check(target)
        except tensorboard.Occupied as exc:
            raise UsageError(str(exc)) from None
    return target


def _write_trace(session: str, target: Path) -> None:
    from tuimon.report import trace
    from tuimon.sessiondir import store

    started = time.monotonic()
    meta = store.read_meta(session)
    other = {"session": meta.get("name") or Path(session).name, "tuimon": meta.get("tuimon"),
             "command": " ".join(meta.get("argv") or [])}
    try:
        written = trace.export(session, target, other)
    except OSError as exc:
        raise UsageError(f"cannot write the trace {target}: {exc.strerror or exc}") from None
    print(f"tuimon: wrote {target} ({fmt_bytes(written.bytes)}, {written.events:,} trace events: "
          f"{written.runs} runs, {written.steps:,} steps, in {time.monotonic() - started:.1f} s); "
          "open it in ui.perfetto.dev or chrome://tracing")
    _say_unreadable(written.unreadable)


def _write_board(session: str, target: Path, overwrite: bool) -> int:
    from tuimon.report import tensorboard

    started = time.monotonic()
    try:
        written = tensorboard.export(session, target, overwrite=overwrite)
    except tensorboard.Missing as exc:
        print(f"tuimon: error: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except tensorboard.Occupied as exc:
        raise UsageError(str(exc)) from None
    except OSError as exc:
        raise UsageError(f"cannot write the TensorBoard runs into {target}: {exc.strerror or exc}") from None
    except ValueError as exc:  # a session whose events cannot be summarized
        raise UsageError(f"cannot read the session {session}: {exc}") from None
    print(f"tuimon: wrote {len(written.runs)} TensorBoard runs into {target}/ "
          f"({', '.join(written.runs)}; {written.steps:,} steps, in {time.monotonic() - started:.1f} s); "
          f"tensorboard --logdir {target}")
    _say_unreadable(written.unreadable)
    return EXIT_OK


def _say_unreadable(bad: int) -> None:
    if bad:
        from tuimon.sessiondir import store

        print(f"tuimon: warning: {store.unreadable_note(bad)}", file=sys.stderr)
