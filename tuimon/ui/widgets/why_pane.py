"""The why pane (key w): the summary document's "Why" section for the focused variant (on a panel
without findings, every variant's), the same as summary.md's; this module only draws it. The
focused variant's findings are selectable (↑ ↓): each says the fix ``t`` would add
(analysis/tried.py), and what each fix raced so far did heads the pane."""

from __future__ import annotations

from rich.console import Group
from rich.padding import Padding
from rich.text import Text
from textual.containers import VerticalScroll
from textual.geometry import Region
from textual.widgets import Static

from tuimon.analysis import HIGH, MEDIUM, SessionSummary, tried
from tuimon.report import sections
from tuimon.report.document import ADVICE, EVIDENCE, FACT, FINDING, TRIED, WARNING, Line, plain
from tuimon.report.try_text import fix_hint
from tuimon.ui.model import RunLive
from tuimon.variants import SCRIPT

STYLE = {HIGH: "bold red", MEDIUM: "bold yellow"}


class WhyPane(VerticalScroll, can_focus=False):  # focus stays on the panels
    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.cursor = 0  # the selected finding of the focused variant (↑ ↓)
        self._run: str | None = None  # the run the cursor is on: another focused, it starts again
        self._summary: SessionSummary | None = None  # the summary last worded, and its words
        self._whys: list[Line] = []  # the Why section's headings, each variant's findings under it
        self._tried: list[str] = []
        self._loop: list[Line] = []  # how a script's loop was read (report/anatomy_text.py)
        self._drawn: tuple | None = None
        self._scroll = False  # the cursor moved: bring its finding into view
        self.shown = None  # the renderable on screen (tests print it)

    def compose(self):
        yield Static(id="why-body")

    def show(self, live: RunLive | None, summary: SessionSummary) -> None:
        """Redraw from the summary, when the pane is open (the diagnosis is not free: once a
        summary)."""
        if not self.has_class("visible"):
            return
        if summary is not self._summary:
            doc = sections.document({}, summary, only=("tried", "why", "loop"))
            self._summary, self._whys, self._drawn = summary, list(doc["why"].lines), None
            self._loop = list(doc["loop"].lines)
            self._tried = [x.text for x in doc["tried"].of(TRIED)]
        run = live.run if live is not None else None
        if run != self._run:
            self._run, self.cursor = run, 0
        found = findings(mine(live, self._whys))
        self.cursor = max(0, min(self.cursor, len(found) - 1))
        key = (run, live.device if live else None, self.cursor)  # and the summary, above
        if key == self._drawn:  # as on screen (a move past the last finding)
            self._scroll = False
            return
        self._drawn = key
        cursor = self.cursor if found else None
        picks = [pick_for(live, f) for f in found]
        parts, selected = layout(live, self._whys, cursor, picks, self._tried)
        if self._loop:  # how the loop was read, under the diagnosis
            parts += loop_parts(self._loop)
        self.shown = Group(*parts)
        self.query_one("#why-body", Static).update(self.shown)
        if self._scroll and selected is not None:
            self._scroll = False
            self.call_after_refresh(self._into_view, parts, selected)

    def move(self, step: int) -> None:
        """↑ ↓: the previous / next finding (drawn at the next redraw)."""
        self.cursor = max(0, self.cursor + step)
        self._scroll = True

    def selected(self, live: RunLive | None) -> Line | None:
        """The finding under the cursor, of the focused variant; None when it has none."""
        found = findings(mine(live, self._whys))
        if not found:
            return None
        cursor = self.cursor if live is not None and live.run == self._run else 0
        return found[min(cursor, len(found) - 1)]

    def _into_view(self, parts: list, selected: tuple[int, int]) -> None:
        """Scrolls the selected finding (its parts ``selected``) into the pane's view."""
        width = max(1, self.scrollable_content_region.width)
        console = self.app.console
        options = console.options.update_width(width)
        heights = [len(console.render_lines(p, options, pad=False)) for p in parts]
        first, end = selected
        if not self.cursor:  # the first finding: what heads the pane in view too
            first = 0
        top = sum(heights[:first])
        self.scroll_to_region(Region(0, top, width, max(1, sum(heights[first:end]))), animate=False)


def mine(live: RunLive | None, whys: list[Line]) -> Line | None:
    """The focused run's variant among the diagnosed ones (with --repeats, its combined row)."""
    if live is None:
        return None
    return next((v for v in whys if v.figures["run"] == live.run or v.label == live.variant.label), None)


def findings(v: Line | None) -> list[Line]:
    return [f for f in v.under if f.kind == FINDING] if v is not None else []


def pick_for(live: RunLive, f: Line) -> tried.Pick:
    """The fix ``t`` adds for finding ``f`` to the focused run's variant (analysis decides)."""
    variant = live.variant
    return tried.pick(f.figures["fixes"], variant.fixes, on_cuda=(live.device or "").startswith("cuda"),
                      is_script=live.precision == SCRIPT, compiled=variant.compiled,
                      repeated=f.figures["repeated"])


def render(live: RunLive | None, whys: list[Line], cursor: int | None = None,
           picks: list[tried.Pick] | None = None, tried_lines: list[str] | None = None):
    return Group(*layout(live, whys, cursor, picks or [], tried_lines or [])[0])


def layout(live: RunLive | None, whys: list[Line], cursor: int | None,
           picks: list[tried.Pick], tried_lines: list[str]) -> tuple[list, tuple[int, int] | None]:
    """The pane's parts, and which of them (first, end) are the selected finding's."""
    parts: list = [Text(f"tried: {line}", style="bold cyan") for line in tried_lines]
    if not whys:
        parts.append(Text("why: nothing to say yet (no finding for an eager run; n adds a compiled "
                          "one)", style="dim"))
        return parts, None
    # The focused variant first; on a panel without a finding, every variant in order.
    found = mine(live, whys)
    selected = None
    for v in [found] if found else whys:
        parts.append(Text(f"why {v.text}", style="bold"))
        if not findings(v):
            parts.append(Padding.indent(Text("no finding yet (a capture is taken as the second turn "
                                             "begins, in runs of 30 steps or more)", style="dim"), 1))
        for k, f in enumerate(findings(v), 1):
            first, chosen = len(parts), v is found and cursor == k - 1
            parts += finding_parts(k, f, chosen, picks[k - 1] if v is found and k <= len(picks) else None)
            if chosen:
                selected = (first, len(parts))
    if found is not None and any(p.fix for p in picks):
        parts.append(Text("↑ ↓ select a finding · t tries its fix now, as a new panel", style="dim"))
    if found is not None and len(whys) > 1:
        others = ", ".join(v.label for v in whys if v is not found)
        parts.append(Text(f"other variants ({others}): focus their panel", style="dim"))
    return parts, selected


def loop_parts(lines: list[Line]) -> list:
    """How the script's loop was read: its facts, and where the script's own numbers disagree."""
    parts: list = [Text("how tuimon read the loop", style="bold")]
    for x in lines:
        text = f"{x.label}: {x.text}" if x.kind != FACT and x.label else x.text
        parts.append(Padding.indent(Text(plain(text), style="yellow" if x.kind == WARNING else ""), 1))
    return parts


def finding_parts(k: int, f: Line, chosen: bool, pick: tried.Pick | None) -> list:
    """A finding: its title (and price), its evidence, what to try, and the fix t would add."""
    title = Text(f"{'▶' if chosen else ' '} {k}. {f.text}", style=STYLE.get(f.figures["severity"], ""))
    if f.figures["price"]:  # what it costs a step or a start
        title.append(f" — {f.figures['price']}", style="magenta")
    if chosen:
        title.stylize("reverse")
    parts = [Padding.indent(title, 0)]
    parts += [Padding.indent(Text(f"· {u.text}"), 4) for u in f.under if u.kind == EVIDENCE]
    parts += [Padding.indent(Text(f"try: {u.text}", style="green"), 4) for u in f.under if u.kind == ADVICE]
    hint = fix_hint(pick) if pick is not None else None
    if hint:
        parts.append(Padding.indent(Text(hint, style="cyan" if pick.fix else "dim"), 4))
    return parts
