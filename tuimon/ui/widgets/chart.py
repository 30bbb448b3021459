"""A chart widget: holds a Plot, draws it (widgets/chart_draw.py) at its own size. Redraws are
where the UI spends its time, so a chart repaints only the rows that changed, and one off
screen (behind the overlay) draws nothing until shown."""

from __future__ import annotations

from rich.style import Style
from textual.geometry import Region
from textual.strip import Strip
from textual.widget import Widget

from tuimon.ui.widgets.chart_draw import Plot, Rows, draw


class Chart(Widget):
    DEFAULT_CSS = """
    Chart { height: 1fr; min-height: 3; }
    """

    def __init__(self, name: str, *, classes: str = "", focusable: bool = False) -> None:
        super().__init__(classes=classes)
        self.chart_name = name  # what this chart is, e.g. "step time" (the zoom view's title)
        self.can_focus = focusable
        self.data: Plot | None = None
        self._strips: list[Strip] | None = None
        self._drawn_size: tuple[int, int] | None = None
        self._rows = Rows()  # the last drawing's rows, styled: reused where nothing changed
        self._rows_style: Style | None = None  # the style they were built in

    def plot(self, data: Plot) -> None:
        self.data = data
        size = (self.content_size.width, self.content_size.height)
        if not self.region or not size[0]:  # off screen: drawn when shown
            self._strips = None
            return
        old = self._strips if self._drawn_size == size else None
        new = self._draw(size)
        if old is None or len(old) != len(new):
            self.refresh()
            return
        for y, (a, b) in enumerate(zip(old, new, strict=True)):
            if a is not b:  # a row that did not change is the same Strip (chart_draw.Rows)
                self.refresh(Region(0, y, size[0], 1))

    def _draw(self, size: tuple[int, int]) -> list[Strip]:
        self._drawn_size = size
        base = self.rich_style
        if self._rows_style != base:  # first, or e.g. focus: every row anew
            self._rows, self._rows_style = Rows(lambda strip: strip.apply_style(base)), base
        self._strips = draw(self.data, *size, self._rows) if self.data is not None and size[0] else []
        return self._strips

    def render_line(self, y: int) -> Strip:
        size = (self.content_size.width, self.content_size.height)
        strips = self._strips if self._strips is not None and self._drawn_size == size else self._draw(size)
        return strips[y] if y < len(strips) else Strip.blank(size[0])
