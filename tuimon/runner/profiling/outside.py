"""What a script's step ran outside its timed phases, from a capture: the ``outside`` table of a
``profile`` event (analysis.py builds it for a script's capture, outer_spans.py's spans on).

Each active step (its ``ProfilerStep`` span, on the thread that ran the loop) is walked from the
top. Left out, with everything inside them: tuimon's own labels, the trained module's calls
(``module: NAME (trained)``), the DataLoader's ``__next__``, ``optimizer.step()`` and autograd's
backward nodes: those are the data, forward (and eval), optimizer and backward phases. What is
left is the step's "other", and it is one of three things:
- ``modules``: an outermost module call that is not the trained module's (``module: Vgg16``: a
  frozen loss network's forward, a teacher, ``nn.MSELoss``), with the ops it ran most;
- ``ops``: an op called outside every module (``aten::bmm`` of a Gram matrix, ``aten::item``);
  on a compiled variant, whose capture spans no other module (``modules_named`` false), the
  other modules' ops too;
- ``host_ms``: time covered by no event at all: Python between ops (the loop's own code,
  logging, a metric computed in Python).
A record_function of the script's own (or torch's, e.g. ``Optimizer.zero_grad``) is looked
into, not counted. Times are CPU time per step (means over the active steps, the profiler's
cost in them); ``share`` is of the mean captured step.
"""

from __future__ import annotations

from collections import defaultdict

from tuimon.runner.profiling.event_tree import Ev
from tuimon.runner.profiling.labels import LABEL, MODULE, TRAINED

TOP_OPS = 8  # ops outside every module, by time
MODULE_OPS = 3  # the ops a module spent most in, named beside it
# The spans of the step's timed phases (besides tuimon's labels and the trained module's calls).
PHASE_SPANS = ("enumerate(DataLoader)", "Optimizer.step#", "autograd::engine::evaluate_function")


def _ms(us: float, steps: int) -> float:
    return round(us / 1000.0 / steps, 4)


def _row(name: str, calls: int, us: float, n: int, window_us: float) -> dict:
    return {"name": name, "calls": round(calls / n, 2), "ms": _ms(us, n), "share": round(us / window_us, 4)}


def _phase(name: str) -> bool:
    return name.startswith((LABEL, *PHASE_SPANS)) or (name.startswith(MODULE) and name.endswith(TRAINED))


def outside(steps: list[Ev], n: int, window_us: float, named: bool = True) -> dict:
    """The ``outside`` table of the active steps ``steps`` (their ``ProfilerStep`` events).
    ``named``: other modules' calls were spans (not on a compiled variant: outer_spans.py); else
    their ops count as ops outside any module (``modules_named`` says so)."""
    modules: dict[str, list] = {}  # name -> [calls, µs, {op: µs}]
    ops: dict[str, list[float]] = {}  # name -> [calls, µs]
    host = [0.0]

    def walk(parent: Ev) -> None:
        """``parent``'s children (a step, or a label of the script's) that are not a phase."""
        for e in parent.children:
            name = e.name
            if _phase(name):
                continue
            if name.startswith(MODULE):
                row = modules.setdefault(name[len(MODULE):], [0, 0.0, defaultdict(float)])
                row[0] += 1
                row[1] += e.total_us
                for op in _outermost_ops(e):
                    row[2][op.name] += op.total_us
            elif e.annotation:
                walk(e)
                host[0] += e.self_us  # a label's own time: Python inside it, between its ops
            else:
                row = ops.setdefault(name, [0, 0.0])
                row[0] += 1
                row[1] += e.total_us

    for step in steps:
        walk(step)
        host[0] += step.self_us
    window_us = window_us or 1.0
    mods = sorted(modules.items(), key=lambda kv: -kv[1][1])
    top = sorted(ops.items(), key=lambda kv: -kv[1][1])
    out_mods = [{**_row(name, calls, us, n, window_us),
                 "ops": [op for op, _ in sorted(inner.items(), key=lambda kv: -kv[1])[:MODULE_OPS]]}
                for name, (calls, us, inner) in mods]
    out_ops = [_row(name, calls, us, n, window_us) for name, (calls, us) in top[:TOP_OPS]]
    modules_us = sum(row[1] for row in modules.values())
    ops_us = sum(row[1] for row in ops.values())
    return {"modules": out_mods, "ops": out_ops, "modules_named": named, "modules_ms": _ms(modules_us, n),
            "ops_ms": _ms(ops_us, n), "host_ms": _ms(host[0], n),
            "modules_share": round(modules_us / window_us, 4), "ops_share": round(ops_us / window_us, 4),
            "host_share": round(host[0] / window_us, 4)}


def _outermost_ops(e: Ev):
    """The ops called directly inside span ``e`` (through any labels): aten::conv2d, not the
    kernels below it."""
    stack = list(e.children)
    while stack:
        c = stack.pop()
        if c.annotation:
            stack.extend(c.children)
        else:
            yield c
