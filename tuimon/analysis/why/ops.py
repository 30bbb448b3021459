"""The top-op diff of the eager and the compiled captures: the step split side by side, the ops
that were fused away, got faster or slower, those compile left as they were (matrix multiplies
call the same libraries), and compile's own per-step work (guards, wrappers). When a capture was
disturbed (``Context.timed``), only which ops are gone is said: its times would mislead. When
no compiled graph ran in the compiled capture, no fusion is claimed: what differs is noise."""

from __future__ import annotations

from tuimon.analysis.why.finding import INFO, MEDIUM, Context, Finding, span
from tuimon.fmt import fmt_ms, short_name

GRAPH = "## Call CompiledFxGraph"
GLUE = ("Torch-Compiled Region", "CompiledFunction", "TorchDynamo", "CompiledFunctionBackward")
MIN_MS = 0.05  # per step, and MIN_SHARE of the eager step: smaller differences are noise in a
MIN_SHARE = 0.02  # two-step capture
SHOWN = 4
GEMM = ("mm", "conv", "linear", "gemm", "attention")  # library kernels compile calls as they are


def _names(rows: list[tuple[str, float]]) -> str:
    return ", ".join(f"{short_name(name, 32)} {fmt_ms(ms)}" for name, ms in rows[:SHOWN]) + (
        f" and {len(rows) - SHOWN} more" if len(rows) > SHOWN else "")


def _ops(p: dict, key: str) -> dict[str, float]:
    return {o["name"]: o["self_ms"] for o in p.get(key) or []}


def op_diff(ctx: Context) -> list[Finding]:
    a, b = ctx.base_capture, ctx.capture
    if not a or not b or ctx.baseline is None:
        return []
    key = "top_device_ops" if a.get("top_device_ops") and b.get("top_device_ops") else "top_ops"
    eager, compiled = _ops(a, key), _ops(b, key)
    fused = sorted(((n, ms) for n, ms in eager.items() if n not in compiled), key=lambda x: -x[1])
    what = "device time by op" if key == "top_device_ops" else "CPU self time by op"
    evidence = [f"{ctx.baseline.label}'s {span(a)} vs {ctx.row.label}'s {span(b)}, {what}, per step"]
    graph_ms = sum(ms for name, ms in compiled.items() if name.startswith(GRAPH))
    if not b.get("compiled_graphs") and not graph_ms:  # nothing compiled ran: nothing was fused
        evidence.append(f"no call of a compiled graph in {ctx.row.label}'s {span(b)}: its ops ran "
                        "eager, as in the eager run")
        return [Finding("ops", f"top ops: no compiled graph ran in {ctx.row.label}'s capture, so "
                        "no eager op was fused", evidence, [], INFO)]
    if not ctx.timed:
        names = ", ".join(short_name(n, 32) for n, _ in fused[:SHOWN])
        evidence += [*ctx.disturbed.values(),
                     f"gone from the compiled top ops (fused into compiled kernels): {names}"]
        return [Finding("ops", f"top ops: {len(fused)} of eager's top ops fused into compiled graphs",
                        evidence, [], INFO)]
    least = max(MIN_MS, MIN_SHARE * (a.get("step_ms") or 0.0))
    glue_ms = sum(ms for name, ms in compiled.items() if name.startswith(GLUE))
    both = [(n, eager[n], compiled[n]) for n in eager if n in compiled]
    faster = sorted(((n, e - c) for n, e, c in both if c < 0.8 * e and e - c >= least), key=lambda x: -x[1])
    slower = sorted(((n, c - e) for n, e, c in both if c > 1.2 * e and c - e >= least), key=lambda x: -x[1])
    same = sorted(((n, c) for n, e, c in both if abs(c - e) < max(0.2 * e, least) and c >= least),
                  key=lambda x: -x[1])
    sa, sb = a.get("split") or {}, b.get("split") or {}
    parts = [f"{p} {fmt_ms(sa.get(f'{p}_ms'))} → {fmt_ms(sb.get(f'{p}_ms'))}"
             for p in ("forward", "backward", "optimizer", "data") if sa.get(f"{p}_ms") or sb.get(f"{p}_ms")]
    fused_ms = sum(ms for _, ms in fused)
    lines = [
        ("step split: " + " · ".join(parts), parts),
        (f"gone from the compiled top ops (fused into compiled kernels), {fmt_ms(fused_ms)} in eager: "
         f"{_names(fused)}", fused),
        (f"the compiled graphs' own time (their fused kernels): {fmt_ms(graph_ms)}", graph_ms),
        (f"faster (time saved a step): {_names(faster)}", faster),
        (f"slower (time added a step): {_names(slower)}", slower),
        (f"about the same: {_names(same)}", same),
        ("compile's own per-step work (guards, cache lookups, autograd wrappers): "
         f"{fmt_ms(glue_ms)}", glue_ms >= least),
    ]
    evidence += [text for text, shown in lines if shown]
    evidence.append("two-step captures: a rough guide, not the steady-state numbers")
    advice = []
    gemm = [n for n, _ in same[:3] if any(w in n for w in GEMM)]
    if gemm:
        advice.append(f"{', '.join(short_name(n, 24) for n in gemm)} take the same time either way (the "
                      "same library kernels): lower precision (--precision amp) or max-autotune are the "
                      "levers there")
    if slower:
        advice.append("an op got slower compiled: try max-autotune, and keep the chrome trace of a capture "
                      "(key p, or --profile-at) for a bug report")
    if glue_ms >= 0.1 * (sb.get("step_ms") or float("inf")):
        advice.append("compile's per-step overhead is a large share: fewer graphs (no breaks), or "
                      "reduce-overhead on a GPU")
    title = (f"top ops: {fmt_ms(fused_ms)} a step of eager ops fused into {fmt_ms(graph_ms)} of "
             "compiled graphs")
    if slower:
        title += f"; {len(slower)} op{'s' if len(slower) > 1 else ''} slower"
    return [Finding("ops", title, evidence, advice, MEDIUM if slower else INFO)]
