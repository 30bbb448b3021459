"""The top-op diff of the eager and the compiled captures: the step split side by side, the ops
that were fused away, got faster or slower, those compile left as they were (matrix multiplies
call the same libraries), and compile's own per-step work (guards, wrappers). When a capture was
disturbed (``Context.timed``), only which ops are gone is said: its times would mislead. When
no compiled graph ran in the compiled capture, no fusion is claimed: what differs is noise."""

from __future__ import annotations

from tuimon.analysis.stats.point import point
from tuimon.analysis.why.finding import INFO, MEDIUM, Context, Finding, span

GRAPH = "## Call CompiledFxGraph"
GLUE = ("Torch-Compiled Region", "CompiledFunction", "TorchDynamo", "CompiledFunctionBackward")
MIN_MS = 0.05  # per step, and MIN_SHARE of the eager step: smaller differences are noise in a
MIN_SHARE = 0.02  # two-step capture
GEMM = ("mm", "conv", "linear", "gemm", "attention")  # library kernels compile calls as they are


def _ops(p: dict, key: str) -> dict[str, float]:
    return {o["name"]: o["self_ms"] for o in p.get(key) or []}


def op_diff(ctx: Context) -> list[Finding]:
    a, b = ctx.base_capture, ctx.capture
    if not a or not b or ctx.baseline is None:
        return []
    key = "top_device_ops" if a.get("top_device_ops") and b.get("top_device_ops") else "top_ops"
    eager, compiled = _ops(a, key), _ops(b, key)
    fused = sorted(((n, ms) for n, ms in eager.items() if n not in compiled), key=lambda x: -x[1])
    evidence = [point("ops.captures", base=ctx.baseline.label, base_steps=span(a), label=ctx.row.label,
                      steps=span(b), device=key == "top_device_ops")]
    graph_ms = sum(ms for name, ms in compiled.items() if name.startswith(GRAPH))
    if not b.get("compiled_graphs") and not graph_ms:  # nothing compiled ran: nothing was fused
        evidence.append(point("ops.ran_eager", label=ctx.row.label, steps=span(b)))
        return [Finding("ops", point("ops.no_graph", label=ctx.row.label), evidence, [], INFO)]
    if not ctx.timed:  # only which ops are gone: the times would mislead
        evidence += [*ctx.disturbed.values(), point("ops.gone", ops=[n for n, _ in fused])]
        return [Finding("ops", point("ops.fused_count", n=len(fused)), evidence, [], INFO)]
    least = max(MIN_MS, MIN_SHARE * (a.get("step_ms") or 0.0))
    glue_ms = sum(ms for name, ms in compiled.items() if name.startswith(GLUE))
    both = [(n, eager[n], compiled[n]) for n in eager if n in compiled]
    faster = sorted(((n, e - c) for n, e, c in both if c < 0.8 * e and e - c >= least), key=lambda x: -x[1])
    slower = sorted(((n, c - e) for n, e, c in both if c > 1.2 * e and c - e >= least), key=lambda x: -x[1])
    same = sorted(((n, c) for n, e, c in both if abs(c - e) < max(0.2 * e, least) and c >= least),
                  key=lambda x: -x[1])
    sa, sb = a.get("split") or {}, b.get("split") or {}
    parts = [(p, sa.get(f"{p}_ms"), sb.get(f"{p}_ms"))
             for p in ("forward", "backward", "optimizer", "data") if sa.get(f"{p}_ms") or sb.get(f"{p}_ms")]
    fused_ms = sum(ms for _, ms in fused)
    found = [  # each line where it has something to say
        (point("ops.split", parts=parts), parts),
        (point("ops.fused", ms=fused_ms, ops=fused), fused),
        (point("ops.graphs", ms=graph_ms), graph_ms),
        (point("ops.faster", ops=faster), faster),
        (point("ops.slower", ops=slower), slower),
        (point("ops.same", ops=same), same),
        (point("ops.glue", ms=glue_ms), glue_ms >= least),  # guards, cache lookups, autograd wrappers
    ]
    evidence += [said for said, shown in found if shown]
    evidence.append(point("ops.rough"))  # two-step captures, not the steady-state numbers
    advice = []
    gemm = [n for n, _ in same[:3] if any(w in n for w in GEMM)]
    if gemm:  # the same library kernels either way
        advice.append(point("ops.gemm", ops=gemm))
    if slower:
        advice.append(point("ops.got_slower"))
    if glue_ms >= 0.1 * (sb.get("step_ms") or float("inf")):
        advice.append(point("ops.overhead"))
    what = point("ops.fused_into", fused_ms=fused_ms, graph_ms=graph_ms, slower=len(slower))
    return [Finding("ops", what, evidence, advice, MEDIUM if slower else INFO)]
