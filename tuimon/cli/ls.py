"""``tuimon ls``: the sessions under --out with their state, the supervisor's pid and how many
TUIs are attached."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tuimon.cli.args import DEFAULT_OUT, Parser, UsageError
from tuimon.exit_codes import EXIT_OK
from tuimon.sessiondir import listing


def ls_parser() -> Parser:
    p = Parser(prog="tuimon ls",
               description="List the sessions under --out: state (running, done, failed, "
               "interrupted, stale), variants, start time, recipe, the supervisor's pid and how "
               "many TUIs are attached.")
    p.add_argument("--out", default=DEFAULT_OUT, metavar="DIR",
                   help="the sessions directory (default: ./tuimon-sessions)")
    return p


COLUMNS = ("session", "state", "variants", "started", "recipe", "pid", "viewers")


def viewers(info: listing.SessionInfo) -> str:
    """How many TUIs are attached to a running session's daemon (it counts them); blank for a
    session that has none (headless, or ended)."""
    from tuimon.control.channel import ChannelError, CommandError, request

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
    rows = [[str(s.path.relative_to(out)), s.state, s.variants or "–", s.started, s.recipe,
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
