"""What did not compile: a variant that compiled nothing for training (that is the whole story:
its speed is eager's), and the frames that ran eager beside compiled ones because Dynamo could
not compile them (stats/compiles.py). Each with torch's own reason and hints."""

from __future__ import annotations

from tuimon.analysis.stats.compiles import fell_back
from tuimon.analysis.stats.point import Point, point
from tuimon.analysis.why.finding import HIGH, MEDIUM, Context, Finding


def _hints(failures: list[dict]) -> list[Point]:
    hints = dict.fromkeys(h for f in failures for h in f.get("hints") or [])
    return [point("torch.hint", text=h) for h in hints][:2]


def _failure(f: dict) -> Point:
    return point("fallback.failure", failure=dict(f), count=f["count"], validation=bool(f.get("validation")))


def uncompiled(ctx: Context) -> list[Finding]:
    """A compiled variant that compiled nothing ran as eager does: that is the whole story."""
    r = ctx.row
    if not r.compile.nothing_compiled:
        return []
    what = point("fallback.nothing", why=r.compile.nothing_compiled)
    failures = fell_back(r) or fell_back(r, validation=True)
    if failures:  # Dynamo tried and could not: torch's reason, its hints
        evidence = [point("fallback.all_failed", label=r.label), *map(_failure, failures[:3])]
        advice = [*_hints(failures), point("fallback.compile_part"), point("fallback.log_breaks")]
        return [Finding("uncompiled", what, evidence, advice, HIGH)]
    evidence = [point("fallback.no_compile", label=r.label)]
    if r.compile.val_compiles:  # none in training
        evidence.append(point("fallback.val_compiles", n=r.compile.val_compiles))
    if r.compile.nothing_compiled.code == "double_backward":  # no compile of it to ask for
        advice = [point("fallback.keep_eager")]
    else:
        advice = [point("fallback.compile_module"), point("fallback.compile_in_script")]
    return [Finding("uncompiled", what, evidence, advice, HIGH)]


def fallbacks(ctx: Context) -> list[Finding]:
    """Frames of training that Dynamo could not compile ran eager beside the compiled graphs: the
    speedup is of the compiled part only."""
    r = ctx.row
    failures = fell_back(r)
    if not failures or not r.compile.graphs_fwd:
        return []
    what = point("fallback.frames", n=len(failures), graphs=r.compile.graphs_fwd,
                 frames=[f["frame"] for f in failures[:3]])
    evidence = [_failure(f) for f in failures[:3]]
    advice = [*_hints(failures), point("fallback.eager_gains_nothing"), point("fallback.compile_part")]
    return [Finding("fallback", what, evidence, advice, MEDIUM)]
