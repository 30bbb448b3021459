"""A panel's phase bar: a stacked bar of the steady step's phases with their median times beside
their names ("fwd ?" for a phase its steps could not see), and under it, once the run counted
its FLOPs, what forward and backward achieve. Hidden until the run has phases; the figures are
analysis/stats/phases.py's and flops.py's, the words report/phase_text.py's."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from tuimon.analysis import RunStats
from tuimon.report.flops_text import panel_line
from tuimon.report.phase_text import medians, shares
from tuimon.ui.widgets.redraw import update

COLORS = {"data": "yellow", "forward": "dodger_blue1", "backward": "medium_purple1",
          "optimizer": "green3", "eval": "dark_orange", "other": "grey50"}


class PhaseBar(Static):
    def __init__(self) -> None:
        super().__init__(classes="phase-bar")
        self.display = False
        self._drawn: tuple = (None, 0)  # (the stats, the width) it was drawn from

    def show(self, stats: RunStats | None) -> None:
        if stats is None or not stats.phases.step_phases:
            self.display = False
            return
        self.display = True
        width = self.content_size.width or 36
        if self._drawn[0] is stats and self._drawn[1] == width:
            return  # the same summary's row (it changes a few times a second at most)
        self._drawn = (stats, width)
        update(self, bar(stats, width))


def bar(r: RunStats, width: int) -> Text:
    """'████████ data 0.01 fwd 0.23 bwd 0.19 opt 0.07 other 0.01 ms': the names in their
    segments' colours (what does not fit the width is cut, other first)."""
    cells = max(6, min(20, width // 6))
    t = Text(no_wrap=True)
    for name, n in _widths(shares(r), cells):
        t.append("█" * n, style=COLORS[name])
    for name, short, ms in medians(r):
        t.append(f" {short}", style=f"bold {COLORS[name]}")
        t.append(f" {ms}")
    t.append(" ms", style="dim")
    t.truncate(width, overflow="ellipsis")
    if flops := panel_line(r):  # FLOP/s and MFU of forward and backward
        line = Text(flops, style="dim", no_wrap=True)
        line.truncate(width, overflow="ellipsis")
        t.append("\n")
        t.append_text(line)
    return t


def _widths(parts: list[tuple[str, float]], cells: int) -> list[tuple[str, int]]:
    """Cells a phase, by share, summing to ``cells`` (largest remainders get the rest)."""
    total = sum(share for _, share in parts) or 1.0
    exact = [(name, share / total * cells) for name, share in parts]
    counts = [int(x) for _, x in exact]
    left = cells - sum(counts)
    for k in sorted(range(len(exact)), key=lambda k: -(exact[k][1] - int(exact[k][1])))[:left]:
        counts[k] += 1
    return [(name, n) for (name, _), n in zip(exact, counts, strict=True)]
