"""The profiler pane's tables from a window's nested events: the step split, top ops, device
time, per-module time and the sync detector's findings. Pure functions of ``Ev`` lists."""

from __future__ import annotations

from collections import defaultdict

from tuimon.runner.profiling.event_tree import Ev
from tuimon.runner.profiling.labels import BWD, FWD, LABEL, LOSS_READ, SPLIT, ours
from tuimon.runner.profiling.outside import outside

TOP_N = 30
SCALAR_READS = ("aten::item", "aten::_local_scalar_dense")
SYNC_CALLS = ("cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize", "cudaMemcpy")
ENGINE = "autograd::engine::evaluate_function: "  # the autograd engine's wrapper of a backward node
GRAPH_CALL = "## Call CompiledFxGraph"  # Inductor's span around each call of a compiled graph


def _ms(us: float, steps: int) -> float:
    return round(us / 1000.0 / steps, 4)


def analyse(evs: list[Ev], module_names: list[str] = (), backward: bool = False,
            steps: int | None = None, outer: bool = False, outer_modules: bool = True) -> dict:
    """The pane's tables from the nested events of the active steps (see ``light_events``).

    Times are per step (means over the active steps); ``share`` is of the mean step. A window
    stopped early ends with the stub of a step that never ran: ``steps`` keeps the first ones.
    """
    steps = sorted((e for e in evs if e.cpu and e.name.startswith("ProfilerStep")),
                   key=lambda e: e.start)[:steps]
    n = max(1, len(steps))
    step_us = sum(e.total_us for e in steps)
    window_us = step_us or 1.0
    cpu = [e for e in evs if e.cpu]

    labels: dict[str, float] = defaultdict(float)
    fwd: dict[str, float] = defaultdict(float)
    bwd: dict[str, float] = defaultdict(float)
    spans = []  # (start, end, kind, name) of every tuimon label and module span
    ops: dict[str, list[float]] = {}
    for e in cpu:
        if e.annotation:
            for prefix, sums, kind in ((LABEL, labels, "label"), (FWD, fwd, "forward"),
                                       (BWD, bwd, "backward")):
                if e.name.startswith(prefix):
                    name = e.name[len(prefix):]
                    sums[name] += e.total_us
                    spans.append((e.start, e.end, kind, name))
                    break
            continue
        row = ops.setdefault(e.name, [0, 0.0, 0.0])
        row[0] += 1
        row[1] += e.self_us
        row[2] += e.total_us

    split = {f"{k}_ms": _ms(labels.get(k, 0.0), n) for k in SPLIT}
    split["step_ms"] = _ms(step_us, n)
    split["other_ms"] = round(max(0.0, split["step_ms"] - sum(split[f"{k}_ms"] for k in SPLIT)), 4)
    out = {"steps_recorded": len(steps), "step_ms": split["step_ms"], "split": split,
           "top_ops": _top(ops, n, window_us)}

    kernels: dict[str, list[float]] = {}
    by_op: dict[str, list[float]] = {}
    for e in evs:
        if not e.cpu and not e.annotation:  # kernels, copies (annotations have GPU mirrors)
            for table, name in ((kernels, e.name), (by_op, e.launcher.name if e.launcher else e.name)):
                row = table.setdefault(name, [0, 0.0, 0.0])
                row[0] += 1
                row[1] += e.total_us
                row[2] += e.total_us
    if kernels:  # on a GPU: device time by the op that launched it, and by kernel
        out["top_device_ops"] = _top(by_op, n, window_us)
        out["top_kernels"] = _top(kernels, n, window_us)
    out["modules"] = [{"name": m, "forward_ms": _ms(fwd[m], n) if m in fwd else None,
                       "backward_ms": _ms(bwd[m], n) if backward and m in bwd else None}
                      for m in module_names if m in fwd or m in bwd]
    if kernels:
        out["device_busy_ms"] = _ms(_union_us(e for e in evs if not e.cpu and not e.annotation), n)
    graphs = compiled_graphs(cpu, spans, n)
    if graphs is not None:
        out["compiled_graphs"] = graphs
    if outer:  # a script's: what ran outside the trained module and the step's phases
        out["outside"] = outside(steps, n, window_us, named=outer_modules)
    out["syncs"] = find_syncs(cpu, spans, n)
    out["sync_count"] = round(sum(s["count"] for s in out["syncs"] if not s["ours"]), 2)
    return out


def _top(rows: dict[str, list[float]], n: int, window_us: float) -> list[dict]:
    ranked = sorted(rows.items(), key=lambda kv: kv[1][1], reverse=True)[:TOP_N]
    return [{"name": name, "calls": round(c / n, 2), "self_ms": _ms(s, n), "total_ms": _ms(t, n),
             "share": round(s / window_us, 4)} for name, (c, s, t) in ranked]


def _union_us(evs) -> float:
    """Time covered by at least one of the intervals (the device busy, however many streams)."""
    total, end = 0.0, float("-inf")
    for e in sorted(evs, key=lambda e: e.start):
        if e.end > end:
            total += e.end - max(e.start, end)
            end = e.end
    return total


def compiled_graphs(cpu_events: list[Ev], spans, n: int) -> dict | None:
    """Calls of compiled graphs per step and the host time inside them, by the loop's label
    around each (forward / backward): the rest of those phases ran outside compiled code (graph
    breaks, hooks, eager ops). None when no compiled graph ran."""
    calls = [e for e in cpu_events if e.name.startswith(GRAPH_CALL)]
    if not calls:
        return None
    inside: dict[str, float] = defaultdict(float)
    each: dict[str, list[float]] = {}  # graph -> [calls, host µs]: each graph's part of the step
    for e in calls:
        if any(a.name.startswith(GRAPH_CALL) for a in _ancestors(e)):
            continue  # a graph called from a graph: counted with the outer one
        label, _, _ = _where(e.start, spans)
        inside[label or "other"] += e.total_us
        mine = each.setdefault(graph_name(e.name), [0, 0.0])
        mine[0] += 1
        mine[1] += e.total_us
    ranked = sorted(each.items(), key=lambda kv: -kv[1][1])[:TOP_GRAPHS]
    return {"calls": round(len(calls) / n, 2), "graphs": len({e.name for e in calls}),
            "ms": _ms(sum(inside.values()), n),
            **{f"{k}_ms": _ms(inside.get(k, 0.0), n) for k in ("forward", "backward", "optimizer")},
            "by_graph": [{"name": name, "calls": round(c / n, 2), "ms": _ms(us, n)}
                         for name, (c, us) in ranked]}


TOP_GRAPHS = 12  # the costliest graphs kept by name (a model that breaks everywhere has many)


def graph_name(span: str) -> str:
    """'## Call CompiledFxGraph fabc123… ##' -> 'fabc123…' (its FX graph cache key, cut)."""
    key = span[len(GRAPH_CALL):].strip().strip("#").strip()
    return key[:12] if key else "graph"


def _descendants(e: Ev):
    stack = list(e.children)
    while stack:
        c = stack.pop()
        yield c
        stack.extend(c.children)


def _ancestors(e: Ev):
    p = e.parent
    while p is not None:
        yield p
        p = p.parent


def _where(t: float, spans) -> tuple[str | None, str | None, str | None]:
    """(label, module span kind, module) around the time ``t``: the innermost of each. By time,
    not by thread: on a GPU backward runs on autograd's device thread, inside the main thread's
    ``tuimon: backward``."""
    label = module = kind = None
    best_label = best_module = float("inf")
    for start, end, what, name in spans:
        if start <= t <= end:
            dur = end - start
            if what == "label" and dur < best_label:
                label, best_label = name, dur
            elif what != "label" and dur < best_module:
                kind, module, best_module = what, name, dur
    return label, kind, module


def find_syncs(cpu_events: list[Ev], spans, n: int) -> list[dict]:
    """Host<->device syncs and scalar reads, grouped by (op, kind, where), counts per step.

    A scalar read is ``aten::item`` (or a ``_local_scalar_dense`` outside one); it is a
    ``device_sync`` when a CUDA synchronisation runs inside it, else a ``scalar_read`` (a CPU
    tensor: no device wait, but on a GPU the same line syncs when the tensor lives there). A CUDA
    synchronisation (or a synchronous cudaMemcpy) outside a scalar read is named after the op
    that issued it (``aten::copy_``, ``aten::nonzero`` ...); ``blocking_copy`` when that op
    copied too. ``context``: the outermost op around it that is not tuimon's (the backward node,
    e.g. ``GatherBackward0``, or ``Optimizer.step#AdamW.step``).
    """
    found: dict[tuple, list[float]] = {}

    def add(op: str, kind: str, e: Ev, via: str | None) -> None:
        label, span_kind, module = _where(e.start, spans)
        where = f"{span_kind} › {module}" if module else (label or "outside the step labels")
        outer = [a for a in _ancestors(e) if not ours(a.name)]
        context = outer[-1].name.replace(ENGINE, "") if outer else None  # e.g. GatherBackward0
        row = found.setdefault((op, kind, where, label, module, via, context), [0, 0.0])
        row[0] += 1
        row[1] += e.total_us

    for e in cpu_events:
        name = e.name
        # An item() runs _local_scalar_dense inside it; one read, counted once. (Two events with
        # the very same start and end may nest either way round.)
        if name == "aten::item" or (name == "aten::_local_scalar_dense" and not any(
                a.name == "aten::item" for a in (*_ancestors(e), *_descendants(e)))):
            via = next((d.name for d in _descendants(e) if d.name in SYNC_CALLS), None)
            add(name, "device_sync" if via else "scalar_read", e, via)
        elif name in SYNC_CALLS:
            if any(a.name in SCALAR_READS for a in _ancestors(e)):
                continue  # counted with its scalar read
            op = e.parent if e.parent is not None and not ours(e.parent.name) else e  # who called it
            copies = name == "cudaMemcpy" or any(c.name.startswith("cudaMemcpy") for c in op.children)
            add(op.name, "blocking_copy" if copies else "device_sync", op, name)

    out = [{"op": op, "kind": kind, "where": where, "phase": label, "module": module, "via": via,
            "context": context, "count": round(count / n, 2), "ms": _ms(total_us, n),
            "ours": label == LOSS_READ}
           for (op, kind, where, label, module, via, context), (count, total_us) in found.items()]
    out.sort(key=lambda s: (s["ours"], -s["count"]))
    return out
