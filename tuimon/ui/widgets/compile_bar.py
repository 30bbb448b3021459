"""The compile under way, in a panel: its phases as a bar that grows with time (the compile
pane's timeline, small), so a compiling variant shows what torch is doing, not an empty chart.

    compile 0/0 · inductor codegen · 23 s
    ██████▓▓▓▓▓▓▓▓████████████████░          of 30 s
    dynamo 2.1 s · aot 4.0 s · inductor 1.2 s · codegen 15.9 s
"""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from tuimon.fmt import fmt_s
from tuimon.ui.model import RunLive
from tuimon.ui.widgets.compile_pane import PHASE_STYLE
from tuimon.ui.widgets.redraw import update

SCALES = (5, 10, 20, 30, 60, 120, 300, 600, 1200, 1800, 3600)  # the bar's full width, seconds
STYLE = {**PHASE_STYLE, "starting": "dim", "other": "white"}


class CompileBar(Static):
    def show(self, live: RunLive, now: float) -> None:
        update(self, render(live, now, max(10, self.content_size.width)))


def render(live: RunLive, now: float, width: int) -> Text:
    segments = live.history.compile_bar(now)
    total = sum(seconds for _, seconds in segments)
    scale = next((s for s in SCALES if s >= total), total or 1)
    t = Text()
    t.append(f"compile {live.compile_id or ''}".rstrip(), style="bold magenta")
    if live.compile_phase:
        t.append(f" · {live.compile_phase}")
    t.append(f" · {fmt_s(total)}\n", style="bold")
    tail = f" of {fmt_s(scale)}"
    cells = max(4, width - len(tail))
    used = 0.0
    for family, seconds in segments:
        n = round((used + seconds) / scale * cells) - round(used / scale * cells)
        used += seconds
        t.append("█" * n, style=STYLE.get(family, "white"))
    t.append("░" * max(0, cells - round(used / scale * cells)), style="dim")
    t.append(tail + "\n", style="dim")
    spent: dict[str, float] = {}
    for family, seconds in segments:
        spent[family] = spent.get(family, 0.0) + seconds
    if spent.get("starting", 1.0) < 0.1:
        del spent["starting"]  # the phases were said at once: nothing to tell
    for k, (family, seconds) in enumerate(spent.items()):
        t.append(" · " if k else "", style="dim")
        t.append("■ ", style=STYLE.get(family, "white"))
        t.append(f"{family} {fmt_s(seconds)}", style="dim")
    done = len(live.compiles)
    if done:
        t.append(f"\n{done} compile{'s' if done > 1 else ''} finished", style="dim")
    return t
