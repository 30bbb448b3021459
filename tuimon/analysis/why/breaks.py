"""Graph breaks: how many graphs a step runs, the breaks with their reasons and lines, and the
time a step spends outside compiled code (a capture's ``compiled_graphs`` against its split)."""

from __future__ import annotations

from tuimon.analysis.stats.point import point
from tuimon.analysis.why.finding import HIGH, MEDIUM, Context, Finding, span

SHOWN = 3
# Tips for reasons torch gives no hint for (or one that needs saying in training terms): the words
# in torch's reason -> the tip's code (report/why_words/compiled.py words it).
PATTERNS = (
    (("print", "logging", "logger"), "breaks.print"),
    (("numpy",), "breaks.numpy"),
    (("data-dependent", "data dependent", "nonzero", "dynamic output shape"), "breaks.data_dependent"),
)


def outside_ms(capture: dict | None) -> float | None:
    """Forward and backward time (per step) that ran outside compiled graphs."""
    graphs = (capture or {}).get("compiled_graphs")
    split = (capture or {}).get("split")
    if not graphs or not split:
        return None
    return (max(0.0, (split.get("forward_ms") or 0.0) - graphs.get("forward_ms", 0.0))
            + max(0.0, (split.get("backward_ms") or 0.0) - graphs.get("backward_ms", 0.0)))


def graph_breaks(ctx: Context) -> list[Finding]:
    r, cap = ctx.row, ctx.capture
    if not r.compile.graph_breaks:
        return []
    places = len(r.compile.graph_breaks)
    graphs = (cap or {}).get("compiled_graphs")
    if graphs:  # each step runs this many compiled graphs instead of 2
        what = point("breaks.calls", places=places, calls=graphs["calls"])
        evidence = [point("breaks.seen", calls=graphs["calls"], graphs=graphs["graphs"], steps=span(cap))]
    else:  # this many forward graphs compiled where 1 would do
        what = point("breaks.graphs", places=places, fwd=r.compile.graphs_fwd)
        evidence = [point("breaks.compiled", fwd=r.compile.graphs_fwd, bwd=r.compile.graphs_bwd)]
    evidence += [point("breaks.at", where=b["where"], count=b["count"], reason=b["reason"])
                 for b in r.compile.graph_breaks[:SHOWN]]
    if places > SHOWN:
        evidence.append(point("breaks.more", n=places - SHOWN))
    outside = outside_ms(cap) if ctx.row_timed else None
    share = outside / cap["split"]["step_ms"] if outside is not None and cap["split"].get("step_ms") else None
    if share is not None:  # the eager code between the graphs, guard checks, autograd glue
        evidence.append(point("breaks.outside", ms=outside, share=share))
    if graphs and not ctx.row_timed:
        evidence.append(ctx.disturbed["row"])
    hints = dict.fromkeys((b["where"], b["hint"]) for b in r.compile.graph_breaks[:SHOWN] if b.get("hint"))
    advice = [point("breaks.hint", where=where, hint=hint) for where, hint in hints]
    for words, code in PATTERNS:
        if any(w in b["reason"].lower() for b in r.compile.graph_breaks for w in words):
            advice.append(point(code))
    advice.append(point("breaks.fullgraph"))
    high = (share is not None and share >= 0.1) or places > 2
    return [Finding("graph_breaks", what, evidence, advice, HIGH if high else MEDIUM, outside)]
