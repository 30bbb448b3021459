"""What a finding costs, in words (analysis/why/price.py's Price): beside each finding in Why
(summary.md, summary.json, the headless lines, the TUI's why pane) and in ``tuimon try``'s plan.
"costs 1.80 ms a step (14 %)", "costs 62.0 s of compile a start", and for graph breaks the
capture's account: each compiled graph's calls and time a step, the eager time between them,
and which break it follows where the capture can tell."""

from __future__ import annotations

from tuimon.fmt import fmt_ms, fmt_pct, fmt_s


def price_text(p) -> str | None:
    """'costs 1.80 ms a step (14 %)'; with a start: '... and 62.0 s of compile a start'; None
    when it has neither (unpriced)."""
    if p is None:
        return None
    parts = []
    if p.step_ms is not None:
        share = f" ({fmt_pct(p.share)})" if p.share is not None else ""
        parts.append(f"{fmt_ms(p.step_ms)} a step{share}")
    if p.start_s:
        parts.append(f"{fmt_s(p.start_s)} of compile a start")
    return "costs " + " and ".join(parts) if parts else None


def account_lines(p) -> list[str]:
    """Graph breaks: the capture's account, a line each (empty without one)."""
    a = getattr(p, "account", None)
    if a is None:
        return []
    steps = f" (capture of steps {a.steps[0]}–{a.steps[-1]})" if len(a.steps) >= 2 else ""
    graphs = ", ".join(f"{g['name']} {g['calls']:g}× {fmt_ms(g['ms'])}" for g in a.graphs[:4])
    more = f", {len(a.graphs) - 4} more" if len(a.graphs) > 4 else ""
    lines = [f"a step{steps}: {a.calls:g} compiled-graph calls, {fmt_ms(a.inside_ms)} in them"
             + (f" ({graphs}{more})" if graphs else "")
             + f"; {fmt_ms(a.outside_ms)} of its forward and backward ran eager between them"]
    share = f", {fmt_pct(p.share)}" if p.share is not None else ""
    if a.per_break:
        lines.append(f"the break at {a.sites[0]} costs {fmt_ms(a.outside_ms)} a step{share} "
                     "(the only break: every eager gap follows it)")
    elif len(a.sites) > 1:
        lines.append(f"which of the {len(a.sites)} breaks each gap follows: cannot tell from the "
                     f"capture (it does not tie a graph's call to the frame that broke); "
                     f"together {fmt_ms(a.outside_ms)} a step{share}")
    return lines
