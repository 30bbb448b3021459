"""Why compile did not help, and what bounds each variant's step: rules over the session's
summary, each finding a code and its figures, worded once by report/why_text.py so every surface
shows the same findings in the same words. One module a rule family (docs/layout.md); a variant
that compiled nothing gets that one finding, since no rule reads graphs that never were. A new
diagnosis: docs/development.md, "Adding a diagnosis"."""

from __future__ import annotations

from collections.abc import Callable

from tuimon.analysis.stats import SessionSummary
from tuimon.analysis.stats.point import point
from tuimon.analysis.stats.rows import columns
from tuimon.analysis.why.bound import input_bound, launch_bound, optimizer_bound, phase_split
from tuimon.analysis.why.breaks import graph_breaks
from tuimon.analysis.why.cudagraphs import cudagraphs
from tuimon.analysis.why.fallback import fallbacks, uncompiled
from tuimon.analysis.why.finding import HIGH, INFO, MEDIUM, Context, Finding, VariantWhy, context
from tuimon.analysis.why.flops import flop_use
from tuimon.analysis.why.memory import memory
from tuimon.analysis.why.ops import op_diff
from tuimon.analysis.why.payoff import payoff
from tuimon.analysis.why.price import Price, price
from tuimon.analysis.why.recompiles import recompiles
from tuimon.analysis.why.syncs import host_syncs

Rule = Callable[[Context], list[Finding]]
RULES: tuple[Rule, ...] = (fallbacks, graph_breaks, recompiles, cudagraphs, host_syncs, launch_bound,
                          input_bound, optimizer_bound, memory, payoff, op_diff, phase_split, flop_use)
# An eager variant: what bounds its step (compile's own rules have nothing to read there).
EAGER_RULES: tuple[Rule, ...] = (host_syncs, launch_bound, input_bound, optimizer_bound, phase_split,
                                flop_use)

__all__ = ["HIGH", "INFO", "MEDIUM", "RULES", "Finding", "Price", "VariantWhy", "diagnose"]


def diagnose(summary: SessionSummary) -> list[VariantWhy]:
    """One entry per compiled variant (with --repeats, per combined variant): its speedup, and
    its findings, the most severe and costly first; and one per eager variant with a finding
    (what bounds its step: data, optimizer, host, syncs, or compute)."""
    out = []
    for row in columns(summary):
        if row.timing.untimed and not row.timing.median_ms:  # its training ran where tuimon does not hook:
            continue  # nothing to diagnose (the verdict says so, stats/verdict.py)
        ctx = context(row, summary)
        findings = []
        if not row.compiled:
            rules = EAGER_RULES
        elif row.compile.nothing_compiled:
            rules = (uncompiled,)  # no rule reads compiled graphs that never were
        else:
            rules = RULES
        for rule in rules:
            try:
                findings += rule(ctx)
            except Exception as exc:  # noqa: BLE001 - a rule's bug must never cost the summary files
                findings.append(Finding("internal", point("internal", rule=rule.__name__,
                                                          error=type(exc).__name__, message=str(exc)),
                                        [], [], INFO))
        for f in findings:
            f.variant = row.run
            f.price = price(f, ctx)
        findings.sort(key=lambda f: (-f.severity, -(f.cost_ms or 0.0)))
        if not row.compiled:
            if findings:
                out.append(VariantWhy(row.run, row.label, False, findings, compiled=False))
            continue
        helped = row.compare.speedup_lo is not None and row.compare.speedup_lo > 1.0 and not row.doubts
        across = row.compare.untold is not None and row.compare.untold.get("side") is None  # too wide
        out.append(VariantWhy(row.run, row.label, helped, findings,
                              doubted=bool(row.doubts or summary.busy or across)))
    return out
