"""The warm-start flags of a session (--warm, --cold, --cache-from, --warm-from, --start) and
their checks: what the supervisor's ``Plan.warm`` holds (control/warm.py)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tuimon.cli.args import UsageError

STARTS = ("cold", "warm")


def add_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--warm", action="store_true",
                   help="measure each compiled variant's compile a second time, warm: when a "
                   "variant runs in one process (a script that runs to its own end, --repeats 1), "
                   "one more process per compiled variant, its fresh cache seeded only from the "
                   "first's compile artifacts (with several processes a variant, rounds 2..K "
                   "start warm already)")
    p.add_argument("--cold", action="store_true",
                   help="every process compiles cold, in a fresh empty cache (by default a compiled "
                   "variant's rounds 2..K start warm from round 1's compile artifacts, and a session "
                   "starts warm from the last session under --out of the same code and settings)")
    p.add_argument("--cache-from", metavar="SESSION",
                   help="start every compiled variant from SESSION's compile artifacts (an earlier "
                   "session, here or copied from another machine); a miss is explained, one line "
                   "a reason")
    p.add_argument("--warm-from", choices=("dir", "bundle"), default="dir",
                   help="what a warm start is seeded from: dir, a copy of the kept Inductor cache "
                   "directory (graphs and compiled kernels), or bundle, torch's mega-cache "
                   "(save_cache_artifacts), what torch carries to another machine: on a CPU it "
                   "holds no compiled C++, so the kernels compile again (default: dir)")
    add_start_flag(p)


def add_start_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument("--start", choices=STARTS, default=None,
                   help="the compile the verdict weighs over --horizon: cold (a fresh machine, the "
                   "default) or warm (a cache carried from an earlier run, a restart)")


def warm_settings(args: argparse.Namespace, cache_dir: Path | None) -> dict:
    """Plan.warm from the flags; UsageError for flags that contradict each other or a
    --cache-from that is no session with compile artifacts."""
    if args.cold and (args.warm or args.cache_from):
        raise UsageError(f"--cold and {'--warm' if args.warm else '--cache-from'} contradict each "
                         "other: leave one out")
    if cache_dir is not None and (args.warm or args.cache_from):
        raise UsageError(f"{'--warm' if args.warm else '--cache-from'} measures a start from compile "
                         "artifacts in a fresh cache; --cache-dir / --warm-cache reuse one cache for "
                         "every run: leave one out")
    warm = {"policy": "cold" if args.cold else "rounds", "extra": bool(args.warm),
            "from": args.warm_from}
    if args.warm and args.repeats > 1:
        print(f"tuimon: note: --warm: rounds 2..{args.repeats} of each compiled variant start warm "
              "already", file=sys.stderr)
        warm["extra"] = False
    if args.cache_from:
        from tuimon.control.cache_source import SourceError, read_source

        try:
            _, source = read_source(args.cache_from)
        except SourceError as exc:
            raise UsageError(str(exc)) from None
        warm["source"] = source
    return warm


def here_facts(meta: dict, recipe: Path, warm: dict, out: Path, this: Path, reuse: bool) -> None:
    """meta.json's recipe_sha (a code change between sessions shows); with ``reuse`` and no
    --cache-from, the last session under ``out`` with this one's facts as the source
    (control/cache_source.py); with a source, this session's facts beside its own in the
    cache_source event."""
    from tuimon.control.cache_source import facts, file_sha, last_session, read_source, reuse_key

    meta["recipe_sha"] = file_sha(recipe)
    if reuse and not warm.get("source") and warm.get("policy") == "rounds":
        last = last_session(Path(out), reuse_key(meta), this)
        if last is not None:
            warm["source"] = {**read_source(last)[1], "auto": True}
            print(f"tuimon: note: compiled variants start warm from {last.name}'s compile artifacts "
                  "(the last session of this code with these settings, torch and machine; its cold "
                  "compile is carried over); --cold compiles cold", file=sys.stderr)
    if warm.get("source"):
        warm["source"]["here"] = facts(meta)
