"""What each finding costs: a step (ms, share) or a start (seconds of compile), from the figures
the rules already read; None where it cannot be put in time. ``tuimon try`` orders its fixes by
it, report/why_text.py words it. Graph breaks' account comes from the last clean capture; with
several break sites the split between them is "cannot tell" (``per_break`` False), never
guessed (docs/why.md#what-each-finding-costs)."""

from __future__ import annotations

from dataclasses import dataclass

from tuimon.analysis.why.breaks import outside_ms
from tuimon.analysis.why.finding import Context, Finding


@dataclass(frozen=True)
class Account:
    """A step's compiled graphs and the eager time between them (a capture's)."""
    calls: float  # compiled-graph calls a step
    graphs: tuple[dict, ...]  # each graph: {name, calls (a step), ms (a step)}, the costliest first
    inside_ms: float  # a step's time in compiled graphs
    outside_ms: float  # its forward and backward time outside them
    sites: tuple[str, ...]  # the break sites ("model.py:42"), most often first
    per_break: bool  # the outside time is one site's (True), or its split cannot be told
    steps: tuple[int, ...] = ()  # the steps the capture recorded


@dataclass(frozen=True)
class Price:
    step_ms: float | None = None  # what it costs a step
    share: float | None = None  # of the step (0..1)
    start_s: float | None = None  # what it costs a start: seconds of compile
    account: Account | None = None  # graph breaks: the capture's per-graph account

    def per_step_ms(self, steps: int | None) -> float:
        """For ordering: its step cost plus its start spread over ``steps`` (the run's)."""
        start = (self.start_s or 0.0) * 1000.0 / steps if self.start_s and steps else 0.0
        return (self.step_ms or 0.0) + start


def price(f: Finding, ctx: Context) -> Price | None:
    r = ctx.row
    step = r.timing.median_ms
    share = f.what.get("share") if f.cost_ms is not None else None
    if f.rule == "launch_bound":  # the share of the captured step the device idled
        share = f.what.get("idle")
    split = ((ctx.capture or {}).get("split") or {}).get("step_ms")
    if f.rule == "graph_breaks" and f.cost_ms is not None and split:  # of the captured step
        share = min(1.0, f.cost_ms / split)
    if share is None and f.cost_ms is not None and step:
        share = min(1.0, f.cost_ms / step)
    start = None
    if f.code.startswith("payoff."):
        start = r.compile.compile_s
    elif f.code.startswith("recompiles.") and r.compile.recompile_s:
        start = r.compile.recompile_s
    account = breaks_account(ctx, f.what.code == "breaks.calls") if f.rule == "graph_breaks" else None
    if f.cost_ms is None and start is None and account is None:
        return None
    return Price(f.cost_ms, share, start, account)


def breaks_account(ctx: Context, cut: bool) -> Account | None:
    """``cut``: the breaks cut the step's graphs in pieces (breaks.py graph_count); when they cut
    none, the eager time between the graphs follows no break (no site is named)."""
    cap = ctx.capture or {}
    graphs = cap.get("compiled_graphs")
    outside = outside_ms(cap) if ctx.row_timed else None
    if not graphs or outside is None:
        return None
    sites = tuple(b["where"] for b in ctx.row.compile.graph_breaks) if cut else ()
    by_graph = sorted(graphs.get("by_graph") or [], key=lambda g: -(g.get("ms") or 0.0))
    return Account(graphs.get("calls") or 0.0, tuple(by_graph), graphs.get("ms") or 0.0, outside,
                   sites, len(sites) == 1, tuple(cap.get("active_steps") or ()))
