"""A compiled variant's compiles in words: the summary table's compile rows (time by phase,
graphs, validation passes, the top graph break), one ``compile`` event's cache, and the notes on
what compiled apart from training (validation passes) or not at all (frames Dynamo could not
compile, which ran eager: analysis/stats/compiles.py). Shared by summary.md, the terminal and
the TUI."""

from __future__ import annotations

from tuimon.analysis import Point, RunStats, SessionSummary, columns, fell_back
from tuimon.fmt import DASH, fmt_s

# Why a compiled variant compiled nothing when no compile ran at all (stats/compiles.py none_ran).
NOTHING = ("no compile ran in this variant: the script called no torch.compile that ran and tuimon "
           "compiled no module; pass --compile-module NAME (a module's class) or call torch.compile "
           "in the script")


def fallback_text(f: dict) -> str:
    """'Dynamo could not compile forward() (main.py:28): Attempted to wrap RNN, GRU, or LSTM'."""
    frame = f"{f['frame']}()" if f.get("frame") else "a frame"
    where = f" ({f['where']})" if f.get("where") else ""
    return f"Dynamo could not compile {frame}{where}: {f['reason'] or f['failed']}"


def nothing_text(why: Point) -> str:
    """Why a compiled variant compiled nothing for training (stats/compiles.py compile_story)."""
    if why.code == "failed":  # Dynamo tried and could not: torch's reason
        return fallback_text(why.get("failure")) + (
            " (tried in eval mode with gradients off; training then ran it eager too)"
            if why.get("validation") else "")
    if why.code == "no_op":
        frames = ", ".join(f"{frame}()" for frame in why.get("frames")) or "the frames it was given"
        return f"Dynamo found no tensor operation to compile in {frames}"
    if why.code == "runner":  # the runner's own words
        return why.get("text")
    if why.code == "double_backward":
        modules = " + ".join(why.get("modules"))
        return (f"{modules} cannot be compiled: a double backward (torch.autograd.grad with "
                "create_graph, a gradient penalty) runs through it, which torch.compile does not "
                "support")
    return NOTHING


def guard_word(g: Point) -> str:
    """A validation pass's failed guard in a few words: 'grad_mode', 'batch 8', 'size 12 at dim
    1', 'train/eval mode', else the guard itself (stats/compiles.py guard_kind)."""
    if g.code == "global":
        return g.get("names")
    if g.code == "batch":
        return f"batch {g.get('size')}"
    if g.code == "size":
        return f"size {g.get('size')} at dim {g.get('dim')}"
    if g.code == "mode":
        return "train/eval mode"
    return g.get("text")


def phases_text(r: RunStats) -> str:
    if not r.compiled or not r.compile.compile_phases:
        return DASH
    p = r.compile.compile_phases
    fwd = " · ".join(f"{name} {fmt_s(p[name])}" for name in ("dynamo", "aot", "inductor", "codegen")
                     if p.get(name))
    bwd = f"; backward {fmt_s(p['backward'])}" if p.get("backward") else ""
    # A variant that compiled nothing spent that time trying.
    return f"{fwd}{bwd}" + (" (tried: nothing compiled)" if r.compile.nothing_compiled and fwd else "")


def graphs_text(r: RunStats) -> str:
    if r.compile.nothing_compiled:
        return "nothing compiled"
    if not r.compiled or not (r.compile.graphs_fwd or r.compile.graphs_bwd):
        return DASH
    breaks = sum(1 for _ in r.compile.graph_breaks)
    n = len(r.compile.fell_back)
    eager = f" · {n} frame{'s' if n != 1 else ''} ran eager" if n else ""
    return (f"{r.compile.graphs_fwd} fwd + {r.compile.graphs_bwd} bwd graphs · {breaks} graph break"
            f"{'' if breaks == 1 else 's'} · {r.compile.recompiles} "
            f"recompile{'' if r.compile.recompiles == 1 else 's'}"
            f"{eager}")


def validation_text(r: RunStats) -> str:
    """A script's validation passes' compiles (stats/compiles.py): '2 compiles, grad_mode; batch
    8 (3.1 s)'; never training's recompiles, compile time or graphs."""
    failed = fell_back(r, validation=True)
    if not (r.compile.val_compiles or r.compile.val_guards or failed):
        return DASH
    n = r.compile.val_compiles
    text = f"{n} compile{'' if n == 1 else 's'}" if n else "no compile"
    if r.compile.val_guards:
        text += f", {'; '.join(guard_word(g) for g in r.compile.val_guards[:4])}"
    if r.compile.val_compile_s:
        text += f" ({fmt_s(r.compile.val_compile_s)})"
    if failed:
        f = failed[0]
        text += (f"; {f['frame'] or 'a frame'}() could not compile ({f['reason'] or f['failed']}): "
                 "it ran eager")
    if r.compile.val_limit:
        text += "; the recompile limit was hit: validation runs eager from then on"
    return text


def compile_notes(summary: SessionSummary) -> list[str]:
    """One line a variant whose validation passes compiled (kept apart from training's), and
    one a frame of training that ran eager beside compiled ones, with torch's reason."""
    out = [f"{r.label}: validation: {validation_text(r)}, kept apart: not training's compiles, "
           "recompiles or compile time" for r in columns(summary) if validation_text(r) != DASH]
    for r in columns(summary):
        out += [f"{r.label}: ran eager, not compiled: {fallback_text(f)}" for f in r.compile.fell_back]
    return out


def top_break_text(r: RunStats) -> str:
    if not r.compile.graph_breaks:
        return DASH
    b = r.compile.graph_breaks[0]
    reason = b["reason"] if len(b["reason"]) <= 90 else b["reason"][:89] + "…"
    return f"{b['where']}: {reason}"


def ran_eager(e: dict) -> bool:
    """A ``compile`` event of a frame Dynamo could not compile: it ran eager."""
    return bool(e.get("forward", True) and e.get("failed") and not e.get("graph"))


def compile_cache(e: dict) -> str:
    """One ``compile`` event's cache in a word: warm, cold, "no graph" for a frame Dynamo traced
    without a graph (nothing reached Inductor, so there was no cache to look in), "failed: ran
    eager" for a frame Dynamo could not compile, else ""."""
    if ran_eager(e):
        return "failed: ran eager"
    if e.get("forward", True) and e.get("graph_ops") == 0:
        return "no graph"
    return e["cache"] if e.get("cache") in ("warm", "cold") else ""


VALIDATION = " in a validation pass (kept apart from training's)"


def compile_line(e: dict) -> str:
    """One finished compile, as the terminal says it when it ends: 'compiled 0/0 forward() in 2.1 s,
    mostly inductor 1.2 s (cold cache)'; a frame Dynamo could not compile, with torch's reason."""
    p = e.get("phases") or {}
    main = max(p, key=lambda k: p[k]) if any(p.values()) else None
    part = f", mostly {main} {fmt_s(p[main])}" if main else ""
    what = f"{e['frame']}()" if e.get("frame") else "backward"
    cache = compile_cache(e)
    cache = f" ({cache} cache)" if cache in ("warm", "cold") else f" ({cache})" if cache else ""
    verb = "compiled"
    if ran_eager(e):  # torch's reason: Dynamo could not compile it
        verb, why = "could not compile", (e.get("fail_reason") or "").strip().splitlines()
        cache = f" ({why[0][:200] if why else e.get('failed')}: it runs eager)"
    return (f"{verb} {e.get('compile_id')} {what} in {fmt_s(e.get('seconds'))}{part}{cache}"
            f"{VALIDATION if e.get('validation') else ''}")
