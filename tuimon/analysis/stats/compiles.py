"""What a compiled variant compiled: a script's validation passes' compiles apart from
training's, the frames Dynamo could not compile (they ran eager), and a variant that compiled
nothing, with why. A compile counts only where it made a graph (``made_graph``); one that did
not is kept as a ``fallback`` with torch's reason. apply.py folds the events into the row, and
``compile_story`` sorts them once the run's events are in (report/compile_text.py words them)."""

from __future__ import annotations

import re
import statistics
from dataclasses import replace

from tuimon.analysis.stats.point import Point, point
from tuimon.analysis.stats.records import Compiles
from tuimon.analysis.stats.rows import RunStats

SIZE = re.compile(r"size mismatch at index (\d+)\. expected (\d+), actual (\d+)")
GLOBAL = re.compile(r"GLOBAL_STATE changed: ([\w ,]+)")
TRAINING = re.compile(r"\.training\b")
# A frame of plain Python: Dynamo makes no graph of it. The reason its compile_failures row holds
# (summary.json keeps it as it was); report/compile_text.py words the frames.
NO_OP = "no tensor operation to compile"


def made_graph(e: dict) -> bool:
    """Whether a compile event's compile made a graph: its own word (``graph``), else (sessions
    recorded before it said so) no failure and not zero graph ops. A backward compile's graph is
    the one its forward made."""
    if "graph" in e:
        return bool(e["graph"])
    return not e.get("forward", True) or (not e.get("failed") and e.get("graph_ops") != 0)


def fallback(e: dict) -> dict:
    """A forward compile that made no graph, as one row of ``compile_failures``: torch's kind of
    failure (None for a frame with no tensor operation), its reason's first line, the frame, the
    line that failed, torch's hints."""
    lines = [x.strip() for x in str(e.get("fail_reason") or "").strip().splitlines() if x.strip()]
    where = e.get("fail_where") or e.get("where") or ""
    item = {"failed": e.get("failed"), "reason": lines[0][:300] if lines else (
        "" if e.get("failed") else NO_OP)}
    if e.get("frame") or where:  # older events word the recompile limit alone: rows stay alike
        item.update(frame=e.get("frame"), where=_short(where),
                    hints=[x.split(":", 1)[1].strip()[:200] for x in lines if x.startswith("Hint:")][:2])
    if e.get("validation"):
        item["validation"] = True
    return item


def _short(where: str) -> str:
    """'/a/b/main.py:28' -> 'main.py:28'."""
    path, _, line = where.rpartition(":")
    return f"{path.rsplit('/', 1)[-1]}:{line}" if path else where


def limit_hit(f: dict) -> bool:
    """A failure that is Dynamo's recompile limit: the frame compiled before (recompiles.py)."""
    reason = f.get("reason", "").lower()
    return "recompile limit" in reason or "cache_size_limit" in reason


def fell_back(r: RunStats, validation: bool = False) -> list[dict]:
    """The frames that failed to compile and run eager (training's, or a validation pass's)."""
    return failed_frames(r.compile, validation)


def failed_frames(c: Compiles, validation: bool = False) -> list[dict]:
    return [f for f in c.compile_failures if bool(f.get("validation")) == validation
            and f.get("failed") and not limit_hit(f)]


def guard_kind(reason: str) -> Point:
    """A failed guard by kind: ``global`` (torch's names: grad_mode), ``batch`` (dimension 0
    became ``size``), ``size`` (at ``dim``), ``mode`` (train/eval), else ``guard`` (the guard
    itself, shortened)."""
    first = reason.strip().splitlines()[0] if reason.strip() else ""
    first = re.sub(r"^\d+/\d+:\s*", "", first)
    if m := GLOBAL.search(first):
        return point("global", names=m.group(1).strip())
    if m := SIZE.search(first):
        index, actual = m.group(1), m.group(3)
        return point("batch", size=actual) if index == "0" else point("size", size=actual, dim=index)
    if TRAINING.search(first):
        return point("mode")
    guard = first.split("  # ")[0].strip()
    return point("guard", text=guard if len(guard) <= 60 else guard[:59] + "…")


def compile_story(r: RunStats, c: Compiles | None = None) -> Compiles:
    """``r``'s Compiles (``c``, else its own) with ``val_guards`` (the validation passes' failed
    guards by kind, each once), ``fell_back`` (training's frames that ran eager beside compiled
    ones) and ``nothing_compiled`` (why a compiled variant compiled nothing for training; None
    when it compiled, or while it may still): ``failed`` (Dynamo tried and could not: the first
    failure, and whether only a validation pass tried), ``no_op`` (the frames it found no tensor
    operation in), ``runner`` (the runner's own words, as the first step ended), ``double_backward`` (the
    trained ``modules`` left eager: a double backward reaches them, which torch.compile cannot
    differentiate: no compile to ask for), ``none_ran`` (no compile ran at all)."""
    c = r.compile if c is None else c
    c = replace(c, val_guards=list(dict.fromkeys(guard_kind(x) for x in c.val_reasons)),
                nothing_compiled=None, fell_back=[])
    if not r.compiled or r.status in ("queued", "failed", "skipped"):
        return c
    train, val = failed_frames(c), failed_frames(c, validation=True)
    if c.graphs_fwd:  # compiled graphs ran: what fell back beside them is said apart
        return replace(c, fell_back=[dict(f) for f in train])
    if train or val:  # Dynamo tried and could not: torch's reason (a validation pass's, if only it tried)
        return replace(c, nothing_compiled=point("failed", failure=dict((train or val)[0]),
                                                 validation=not train))
    tried = [f for f in c.compile_failures if not f.get("validation") and f.get("reason") == NO_OP]
    if tried:
        frames = list(dict.fromkeys(f["frame"] for f in tried if f.get("frame")))
        return replace(c, nothing_compiled=point("no_op", frames=frames))
    if c.compiles or c.compile_s:
        return c
    if twice := double_backward(r):  # left eager: no compile of it can work, none to ask for
        return replace(c, nothing_compiled=point("double_backward", modules=twice))
    if c.uncompiled:  # the runner said so as the first step ended
        return replace(c, nothing_compiled=point("runner", text=c.uncompiled))
    if c.compile_s == 0.0 and r.status in ("done", "stopped") and r.timing.median_ms:
        # it said it compiled for 0 s, and reached a steady state
        return replace(c, nothing_compiled=point("none_ran"))
    return c


def double_backward(r: RunStats) -> list[str]:
    """The modules the runner left eager because a double backward reaches them (the anatomy's
    ``double-backward``: torch.compile cannot differentiate a graph twice)."""
    return list(dict.fromkeys(o["module"] for o in r.anatomy.optimizers
                              if o.get("compiled") == "double-backward" and o.get("module")))


def combine_compiles(row: RunStats, processes: list[RunStats]) -> Compiles:
    """--repeats: the combined row's Compiles with its validation compiles (summed), whether it
    compiled nothing (its first process speaks for it) and what fell back."""
    if not processes:
        return row.compile
    times = [r.compile.val_compile_s for r in processes if r.compile.val_compile_s is not None]
    c = replace(row.compile, val_compiles=sum(r.compile.val_compiles for r in processes),
                val_recompiles=sum(r.compile.val_recompiles for r in processes),
                val_compile_s=statistics.median(times) if times else None,
                val_reasons=list(dict.fromkeys(x for r in processes for x in r.compile.val_reasons)),
                val_limit=any(r.compile.val_limit for r in processes),
                uncompiled=processes[0].compile.uncompiled)
    c = compile_story(row, c)
    if all(r.compile.nothing_compiled for r in processes):
        c = replace(c, nothing_compiled=processes[0].compile.nothing_compiled)
    return replace(c, fell_back=_once([x for r in processes for x in r.compile.fell_back]))


def untimed(processes: list[RunStats]) -> str | None:
    """Not a compile's, but said with them: a process whose training ran where tuimon does not
    hook speaks for its variant (its later rounds are not run: control/handover.py)."""
    return next((r.timing.untimed for r in processes if r.timing.untimed), None)


def _once(failures: list[dict]) -> list[dict]:
    """Each failure once (several processes fail alike), in order."""
    out: list[dict] = []
    for f in failures:
        if f not in out:
            out.append(f)
    return out
