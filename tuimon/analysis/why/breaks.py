"""Graph breaks: how many graphs a step runs, the breaks with their reasons and lines, and the
time a step spends outside compiled code (a capture's ``compiled_graphs`` against its split)."""

from __future__ import annotations

from tuimon.analysis.why.finding import HIGH, MEDIUM, Context, Finding, span
from tuimon.fmt import fmt_ms

SHOWN = 3
# Advice for reasons torch gives no hint for (or one that needs saying in training terms).
PATTERNS = (
    (("print", "logging", "logger"), "logging or printing inside forward breaks the graph: log "
     "outside the compiled module, or every N steps"),
    (("numpy",), "numpy inside forward breaks the graph: use the torch op instead"),
    (("data-dependent", "data dependent", "nonzero", "dynamic output shape"),
     "an op whose output shape depends on the data: torch._dynamo.config."
     "capture_dynamic_output_shape_ops = True, or keep it outside the compiled region"),
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
    if not r.graph_breaks:
        return []
    places = len(r.graph_breaks)
    graphs = (cap or {}).get("compiled_graphs")
    if graphs:
        title = (f"graph breaks at {places} place{'s' if places > 1 else ''}: each step runs "
                 f"{graphs['calls']:g} compiled graphs (forward and backward) instead of 2")
        evidence = [f"{graphs['calls']:g} compiled-graph calls a step, {graphs['graphs']} distinct "
                    f"({span(cap)})"]
    else:
        title = (f"graph breaks at {places} place{'s' if places > 1 else ''}: "
                 f"{r.graphs_fwd} forward graphs compiled where 1 would do")
        evidence = [f"{r.graphs_fwd} forward + {r.graphs_bwd} backward graphs compiled"]
    evidence += [f"break at {b['where']} (×{b['count']}): {b['reason']}" for b in r.graph_breaks[:SHOWN]]
    if places > SHOWN:
        evidence.append(f"and {places - SHOWN} more (the compile pane, key c, lists them all)")
    outside = outside_ms(cap) if ctx.row_timed else None
    share = outside / cap["split"]["step_ms"] if outside is not None and cap["split"].get("step_ms") else None
    if share is not None:
        evidence.append(f"{fmt_ms(outside)} a step ({share:.0%}) of forward and backward ran outside "
                        "compiled graphs: the eager code between them, guard checks, autograd glue")
    if graphs and not ctx.row_timed:
        evidence.append(ctx.disturbed["row"])
    advice = list(dict.fromkeys(f"{b['where']}: {b['hint']}" for b in r.graph_breaks[:SHOWN]
                                if b.get("hint")))
    for words, text in PATTERNS:
        if any(w in b["reason"].lower() for b in r.graph_breaks for w in words) and text not in advice:
            advice.append(text)
    advice.append("torch.compile(model, fullgraph=True) stops at the first break with its stack; "
                  "--torch-trace and tlparse show every break and why")
    high = (share is not None and share >= 0.1) or places > 2
    return [Finding("graph_breaks", title, evidence, advice, HIGH if high else MEDIUM, outside)]
