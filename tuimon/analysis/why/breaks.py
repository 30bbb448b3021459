"""Graph breaks: how many graphs a step runs, the breaks with their reasons and lines, and the
time a step spends outside compiled code (a capture's ``compiled_graphs`` against its split)."""

from __future__ import annotations

from tuimon.analysis.stats.point import Point, point
from tuimon.analysis.why.finding import HIGH, MEDIUM, Context, Finding, span

SHOWN = 3
# Graph calls a step per distinct graph from which the graphs repeat within a step (a loop calling
# the module, or identical pieces): 1.5 leaves a stray extra call (a capture's mean) unread.
LOOP = 1.5
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
    r, cap = ctx.row, ctx.capture or {}
    if not r.compile.graph_breaks:
        return []
    places = len(r.compile.graph_breaks)
    graphs = cap.get("compiled_graphs")
    expected = 2 if r.compile.graphs_bwd else 1  # a whole call: one forward graph, one backward
    if graphs:  # the graphs a step runs against a whole call's
        what = graph_count(places, graphs, expected, r.flops.calls)
        evidence = [point("breaks.seen", calls=graphs["calls"], graphs=graphs["graphs"], steps=span(cap))]
    else:  # the forward graphs compiled against a whole module's one
        what = point("breaks.graphs" if r.compile.graphs_fwd > 1 else "breaks.graphs_whole",
                     places=places, fwd=r.compile.graphs_fwd)
        evidence = [point("breaks.compiled", fwd=r.compile.graphs_fwd, bwd=r.compile.graphs_bwd)]
    whole = what.code in ("breaks.whole", "breaks.graphs_whole", "breaks.repeated")  # no break's time
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
    high = not whole and ((share is not None and share >= 0.1) or places > 2)
    # The step's graphs whole: the time between them is the script's own eager code (its loop,
    # the loss), no break's cost.
    return [Finding("graph_breaks", what, evidence, advice, HIGH if high else MEDIUM,
                    None if whole else outside)]


def graph_count(places: int, graphs: dict, expected: int, module_calls: int | None) -> Point:
    """What a capture's compiled-graph calls a step say of the breaks (issue 40.5: "2 compiled
    graphs instead of 2"; "18 instead of 2" that were a per-token loop calling the module 9 times
    a step). Each of the module's calls a step (``module_calls``: the script's hooks count them
    with its FLOPs; a recipe's is 1) runs ``per_call`` graphs: more than ``expected`` (a whole
    call's: forward and backward) is ``breaks.calls``, the breaks cut the step's graphs in pieces;
    no more is ``breaks.whole``, they cut none of them, and the calls beyond are the module's own.
    Uncounted calls with graphs that repeat within a step are ``breaks.repeated``: a loop calling
    the module and breaks between identical pieces (a repeated block) look alike in a capture."""
    calls, distinct = graphs["calls"], max(1, graphs.get("graphs") or 1)
    if module_calls is None and calls >= LOOP * distinct:
        return point("breaks.repeated", places=places, calls=calls, graphs=distinct,
                     repeats=round(calls / distinct))
    per_call = calls / (module_calls or 1)
    return point("breaks.calls" if round(per_call) > expected else "breaks.whole", places=places,
                 calls=calls, per_call=round(per_call, 1), expected=expected,
                 loop=(module_calls or 1) > 1, repeats=module_calls or 1)
