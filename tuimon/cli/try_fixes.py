"""``tuimon try SESSION``: race the fixes SESSION's findings call for (issue 34), measured.

The fixes go on the session's best compiled variant as the axis ``fix`` (tuimon/fixes.py):
one ordinary session runs the eager baseline, the variant as it was (``fix=none``) and the
variant with each fix, rounds paired, with the session's own length (or ``--budget``'s). When
two or more fixes made the step faster beyond noise, a second session races them together.
Each session is an ordinary one (summary, replay, compare and serve read it); the answer, per
fix, is analysis/tried.py's, worded by report/try_text.py.

The session is rebuilt from the one tried: its own command line (meta.json ``argv``) with the
variant, the fixes and the length put in its place, run from the directory it ran in.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from tuimon import cores, fixes
from tuimon.cli.args import Parser, UsageError, budget_arg
from tuimon.exit_codes import EXIT_OK

# The original's options that the try session sets itself (with how many values each takes).
REPLACED = {"--set": 1, "--modes": 1, "--precision": 1, "--compile-optimizer": 0, "--budget": 1,
            "--out": 1, "--headless": 0, "--detach": 0, "--try": 0}
# The original's length, replaced by --budget's --duration (--until-known's flags with it).
LENGTH = {"--steps": 1, "--duration": 1, "--until-known": 0, "--margin": 1, "--to-end": 0}


def try_parser() -> Parser:
    p = Parser(prog="tuimon try", description=(
        "Race the fixes that SESSION's Why suggests (regional compilation, dynamic shapes, "
        "captured scalars, a compiled or fused optimizer step, more loader workers, autocast, "
        "TF32, another compile mode, channels_last) on its best compiled variant, measured, and "
        "print the lines that keep the winners. Nothing of yours is edited: each fix is applied "
        "from outside, in the run's own process."),
        epilog="e.g. tuimon try tuimon-sessions/20261126-101500-train; "
               "tuimon try SESSION --budget 15m --only regional,dynamic")
    p.add_argument("session", help="a session directory (tuimon-sessions/...)")
    p.add_argument("--only", metavar="FIXES",
                   help=f"comma list of fixes to race, suggested or not ({', '.join(fixes.FIXES)})")
    p.add_argument("--budget", type=budget_arg, metavar="TIME",
                   help="the try session's time (20m, 1h30m, or seconds), shared as sweep does; "
                   "default: the tried session's own --steps / --duration")
    p.add_argument("--until-known", action="store_true",
                   help="run the try session until its answer is known (docs/measuring.md), "
                   "--budget its cap on stepping (default 15m)")
    p.add_argument("--plan", action="store_true",
                   help="say what would be raced, and why, and run nothing")
    p.add_argument("--no-together", action="store_true",
                   help="do not race the fixes that helped together afterwards")
    p.add_argument("--headless", action="store_true", help="no TUI: progress and the answer printed")
    return p


def try_command(args: argparse.Namespace) -> int:
    from tuimon.analysis import diagnose, load_session, tried
    from tuimon.report.try_text import budget_line, plan_lines

    only = None
    if args.only is not None:
        try:
            only = list(fixes.parse(args.only.replace(",", fixes.JOIN)))
        except ValueError as exc:
            raise UsageError(f"--only: {exc}") from None
    session = Path(args.session)
    if not (session / "meta.json").is_file():
        raise UsageError(f"not a session directory: {session} (no meta.json)")
    meta, _, summary = load_session(session)
    if not isinstance(meta.get("argv"), list):
        raise UsageError(f"{session}: its meta.json has no command line to run it again")
    is_script = bool(meta.get("command"))
    chosen = tried.plan(summary, diagnose(summary), only=only, is_script=is_script)
    if chosen is None:
        raise UsageError(f"{session}: no run was timed, so nothing can be tried on it")
    for line in plan_lines(chosen, session):
        print(line, flush=True)
    length = None
    if args.budget is not None and chosen.raced and not args.until_known:  # from its compiles and steps
        length = budget_for(args.budget, len(chosen.axis_values()) + 1, meta, chosen.base, summary.runs)
        print(budget_line(length, chosen.base), flush=True)
    if not chosen.raced or args.plan:
        return EXIT_OK
    rc, first = race(session, meta, chosen, chosen.axis_values(), args, length)
    if first is None:
        return rc  # the session could not start: its own one line was said
    return together(session, meta, chosen, first, args, summary.runs)


def try_after(session: Path, headless: bool) -> int:
    """``tuimon RECIPE --try`` / ``tuimon run --try -- CMD``: the session just ended, tried."""
    return try_command(try_parser().parse_args([str(session), *(["--headless"] if headless else [])]))


def race(session: Path, meta: dict, chosen, values: list[str], args,
         length: dict | None) -> tuple[int, Path | None]:
    """One try session: the eager run, the base and ``values`` of the fix axis (``length``:
    --budget's, budget_for); its exit code and its path (None when none was made)."""
    from tuimon.cli import main

    out = session.parent.resolve()
    before = set(out.iterdir())
    argv = rebuild(meta, chosen, values, out, args, length)
    here = os.getcwd()
    cwd = meta.get("cwd")
    try:
        if cwd and os.path.isdir(cwd):
            os.chdir(cwd)  # a script's relative paths mean what they meant
        rc = main(argv)
    finally:
        os.chdir(here)
    made = sorted(set(out.iterdir()) - before)
    return rc, (made[-1] if made else None)


def together(session: Path, meta: dict, chosen, first: Path, args, rows: list) -> int:
    """The fixes that helped, raced together in a second session (``rows``: the tried session's
    runs, for --budget); the answer printed."""
    from tuimon.analysis import load_session, tried
    from tuimon.report.try_text import answer_lines, budget_line

    _, _, summary = load_session(first)
    found = tried.outcomes(summary)
    best = tried.winners(found)
    second = None
    if len(best) >= 2 and not args.no_together:
        print(f"try: {', '.join(best)} each helped: racing them together", flush=True)
        own = chosen.base_fixes
        values = [fixes.join(own), fixes.join((*own, *best))]
        length = None
        if args.budget is not None and not args.until_known:
            length = budget_for(args.budget, len(values) + 1, meta, chosen.base, rows)
            print(budget_line(length, chosen.base), flush=True)
        _, second = race(session, meta, chosen, values, args, length)
        if second is not None:
            found += tried.outcomes(load_session(second)[2])
    for line in answer_lines(found, [first] + ([second] if second else [])):
        print(line, flush=True)
    return EXIT_OK


def rebuild(meta: dict, chosen, values: list[str], out: Path, args, length: dict | None = None) -> list[str]:
    """The tried session's command line with the base variant, the fix axis and the length in
    place of its own (``length``: budget_for's, with --budget)."""
    argv = list(meta["argv"])[1:]  # ["tuimon", ...] as the user typed it (cli/run.py)
    command: list[str] = []
    if "--" in argv:
        i = argv.index("--")
        argv, command = argv[:i], argv[i:]
    if argv[:1] in (["run"], ["sweep"]):
        argv = argv[1:]
    head = ["run"] if command else []  # a script: tuimon run ... -- CMD; a recipe: tuimon RECIPE
    until = getattr(args, "until_known", False)
    drop = {**REPLACED, **(LENGTH if args.budget is not None or until else {})}
    if until:  # rounds until known: the tried session's number of processes goes too
        drop["--repeats"] = 1
    options = strip(argv, drop)
    base = chosen.base
    mode = base.mode
    new = ["--modes", f"eager,{mode}" if mode != "eager" else "eager", "--out", str(out)]
    if not command:
        new += ["--precision", base.precision]
    knobs = (meta.get("run_settings") or {}).get("knobs") or []
    new += [x for k, v in knobs for x in ("--set", f"{k}={v}")]
    new += [x for k, v in base.axes.items() if k != fixes.AXIS for x in ("--set", f"{k}={v}")]
    new += ["--set", f"{fixes.AXIS}={','.join(values)}"]
    if length is not None:
        new += ["--duration", str(round(length["full_s"], 1))]
    if until:
        new += ["--until-known"] + (["--budget", str(args.budget)] if args.budget is not None else [])
    if args.headless:
        new.append("--headless")
    return head + options + new + command


def strip(argv: list[str], drop: dict[str, int]) -> list[str]:
    """``argv`` without the options in ``drop`` (``--opt VALUE`` and ``--opt=VALUE`` alike)."""
    out, i = [], 0
    while i < len(argv):
        word = argv[i]
        name = word.split("=", 1)[0]
        if name in drop:
            i += 1 + (drop[name] if "=" not in word else 0)
            continue
        out.append(word)
        i += 1
    return out


def budget_for(budget_s: float, runs: int, meta: dict, base, rows: list) -> dict:
    """Each run's --duration from the budget, as sweep --budget shares it (cli/budget.py), with
    the compile times the tried session measured (``rows``: its runs; a guess only for a mode it
    did not compile) and, in ``steps``, the steps that length holds at ``base``'s median step."""
    from tuimon.cli import budget
    from tuimon.variants import Variant

    variants = [Variant("eager", base.precision)] + [Variant(base.mode, base.precision)] * (runs - 1)
    repeats = int((meta.get("settings") or {}).get("repeats") or 1)
    try:
        shared = budget.share(budget_s, variants, repeats, cores.usable(), budget.measured(rows),
                              where="the tried session's own compiles")
    except ValueError as exc:
        raise UsageError(f"--budget: {exc}") from None
    step_ms = base.timing.median_ms
    return shared | {"steps": int(shared["full_s"] * 1000 / step_ms) if step_ms else None}
