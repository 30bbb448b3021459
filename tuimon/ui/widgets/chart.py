"""A chart widget: holds a Plot, draws it (widgets/chart_draw.py) at its own size when shown.

Nothing is drawn while the chart is hidden (a panel behind the overlay, a chart that is not
zoomed), and a chart whose plot did not change since its last drawing is not drawn again.
"""

from __future__ import annotations

from textual.strip import Strip
from textual.widget import Widget

from tuimon.ui.widgets.chart_draw import Plot, draw


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

    def plot(self, data: Plot) -> None:
        self.data = data
        self._strips = None
        if self.display:
            self.refresh()

    def render_line(self, y: int) -> Strip:
        size = (self.content_size.width, self.content_size.height)
        if self._strips is None or self._drawn_size != size:
            self._drawn_size = size
            base = self.rich_style
            self._strips = [strip.apply_style(base) for strip in draw(self.data, *size)] if (
                self.data is not None and size[0]) else []
        return self._strips[y] if y < len(self._strips) else Strip.blank(size[0])
