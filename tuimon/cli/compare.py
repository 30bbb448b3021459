"""``tuimon compare A B [C ...]``: sessions side by side (before and after a torch upgrade, a
code change, another GPU): what differs between them first, then each variant they share with
its change against A; ``--fail-if-slower`` makes it a regression guard for CI."""

from __future__ import annotations

import argparse
import math
import string
import sys

from tuimon.cli.args import Parser, UsageError
from tuimon.exit_codes import EXIT_CANNOT_TELL, EXIT_FAILED, EXIT_OK

MAX_SESSIONS = len(string.ascii_uppercase)


def percent(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a percentage (a number), got {text!r}") from None
    if not 0 <= value <= 10_000:  # NaN fails this too
        raise argparse.ArgumentTypeError(f"must be between 0 and 10,000 %, got {text}")
    return value


def compare_parser() -> Parser:
    p = Parser(prog="tuimon compare",
               description="Compare sessions: what differs between them (settings, host, devices, "
               "versions), then each variant they share, with its change against the first "
               "session (A) and whether that change is beyond noise.")
    p.add_argument("sessions", nargs="*", metavar="SESSION_DIR",
                   help="two session directories or more; the first is the baseline")
    p.add_argument("--format", choices=("table", "md", "json"), default="table",
                   help="table: rich tables (default); md: Markdown; json: every figure and change")
    p.add_argument("--fail-if-slower", type=percent, metavar="PCT",
                   help="exit 1 when a variant's median step got slower than in A beyond noise "
                   "by more than PCT %%; exit 4 (cannot tell) when none did but the sessions could "
                   "not have seen such a slowdown (their interval reaches past PCT %%)")
    p.add_argument("--session-spread", type=percent, metavar="PCT", default=None,
                   help="how far a whole session's speed may land from another's on this machine, "
                   "beyond the spread between its processes (the machine's state, which no session "
                   "measures): added to every interval between sessions (default: "
                   f"{session_pct():.0f} %%; bench/aa_guard.py measures yours)")
    p.add_argument("--fail-if-compile-slower", type=percent, metavar="PCT",
                   help="exit 1 when a variant's compile time grew by more than PCT %% (beyond the "
                   "spread between processes when both sessions ran --repeats 2 or more)")
    return p


def compare_command(args: argparse.Namespace) -> int:
    from tuimon.sessiondir import store

    paths = args.sessions
    if len(paths) < 2:
        raise UsageError(f"compare needs two sessions or more, got {len(paths)} "
                         "(tuimon compare SESSION_A SESSION_B ...)")
    if len(paths) > MAX_SESSIONS:
        raise UsageError(f"compare takes at most {MAX_SESSIONS} sessions, got {len(paths)}")
    for path in paths:
        if (why := store.check_session(path)) is not None:
            raise UsageError(why)

    from rich.console import Console

    from tuimon.analysis import compare_sessions, open_session
    from tuimon.report.compare_text import guard_lines, print_rich, to_json, to_markdown

    try:
        sessions = [open_session(path, string.ascii_uppercase[k]) for k, path in enumerate(paths)]
    except OSError as exc:
        raise UsageError(f"cannot read a session: {exc.strerror or exc}") from None
    spread = args.session_spread
    comparison = compare_sessions(sessions, *([] if spread is None else [math.log1p(spread / 100.0)]))
    if not comparison.variants:
        have = "; ".join(f"{s.letter}: {', '.join(_labels(s)) or 'no run'}" for s in sessions)
        raise UsageError(f"no variant in common with A (matched by mode, precision and axis values): {have}")
    failures, cannot, unjudged = guard_lines(comparison, args.fail_if_slower, args.fail_if_compile_slower)
    if args.format == "md":
        sys.stdout.write(to_markdown(comparison, failures, unjudged, cannot))
    elif args.format == "json":
        sys.stdout.write(to_json(comparison, failures, unjudged, cannot))
    else:
        print_rich(Console(), comparison, failures, unjudged, cannot)
    for line in failures + ([] if failures else cannot):  # CI logs show stderr: why the exit code
        print(f"tuimon: compare: {line}", file=sys.stderr)
    if failures:
        return EXIT_FAILED
    return EXIT_CANNOT_TELL if cannot else EXIT_OK


def session_pct() -> float:
    from tuimon.analysis import SESSION_SD

    return math.expm1(SESSION_SD) * 100.0  # as Noise.session_pct says it


def _labels(s) -> list[str]:
    from tuimon.analysis import label

    return [label(k) for k in s.rows]
