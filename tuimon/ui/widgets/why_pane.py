"""The why pane (key w): why compile did not help the focused variant, or what bounds an eager
one's step (on a panel without findings, every variant's): the findings of ``session.why`` with
their evidence and what to try. The findings are the summary's, in report/why_text.py's words,
the same as summary.md's "Why" section; this module only draws."""

from __future__ import annotations

from rich.console import Group
from rich.padding import Padding
from rich.text import Text
from textual.containers import VerticalScroll
from textual.widgets import Static

from tuimon.analysis import HIGH, MEDIUM, SessionSummary
from tuimon.report.why_text import VariantSaid, headline, worded
from tuimon.ui.model import RunLive

STYLE = {HIGH: "bold red", MEDIUM: "bold yellow"}


class WhyPane(VerticalScroll, can_focus=False):  # focus stays on the panels
    def compose(self):
        yield Static(id="why-body")

    def show(self, live: RunLive | None, summary: SessionSummary) -> None:
        """Redraw from the summary, when the pane is open (the diagnosis is not free)."""
        if self.has_class("visible"):
            self.query_one("#why-body", Static).update(render(live, worded(summary)))


def render(live: RunLive | None, whys: list[VariantSaid]):
    if not whys:
        return Text("why: nothing to say yet (no finding for an eager run; n adds a compiled one)",
                    style="dim")
    # The focused variant first; on a panel without a finding, every variant in order.
    focused = [v for v in whys if live is not None and v.run == live.run]
    parts: list = []
    for v in focused or whys:
        parts.append(Text(f"why {headline(v)}", style="bold"))
        if not v.findings:
            parts.append(Padding.indent(Text("no finding yet (a capture is taken as the second turn "
                                             "begins, in runs of 30 steps or more)", style="dim"), 1))
        for k, f in enumerate(v.findings, 1):
            parts.append(Padding.indent(Text(f"{k}. {f.title}", style=STYLE.get(f.severity, "")), 1))
            parts += [Padding.indent(Text(f"· {line}"), 4) for line in f.evidence]
            parts += [Padding.indent(Text(f"try: {line}", style="green"), 4) for line in f.advice]
    if focused and len(whys) > 1:
        others = ", ".join(v.label for v in whys if v.run != live.run)
        parts.append(Text(f"other variants ({others}): focus their panel", style="dim"))
    return Group(*parts)
