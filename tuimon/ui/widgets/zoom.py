"""The zoom view (key z): one chart full screen — the focused overlay chart, or the focused
panel's step-time chart; ← / → (and tab) go to the next chart of the same panel or overlay,
escape (or z) returns. It copies its source chart's plot at every redraw."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical

from tuimon.ui.widgets.chart import Chart


class ZoomChart(Chart):
    BINDINGS = [
        Binding("right,tab", "cycle(1)", "next chart", show=False),
        Binding("left,shift+tab", "cycle(-1)", "previous chart", show=False),
    ]

    def action_cycle(self, step: int) -> None:
        view = self.parent
        if isinstance(view, ZoomView) and view.group:
            k = view.group.index(view.source) if view.source in view.group else 0
            view.zoom(view.group[(k + step) % len(view.group)], view.group, view.prefix)


class ZoomView(Vertical):
    DEFAULT_CSS = """
    ZoomView { height: 1fr; border: round $accent; padding: 0 1; }
    ZoomView ZoomChart { height: 1fr; }
    """

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.source: Chart | None = None
        self.group: list[Chart] = []
        self.prefix = ""  # whose chart: a panel's run label, or "all runs"

    def compose(self) -> ComposeResult:
        yield ZoomChart("zoom", focusable=True)

    def zoom(self, source: Chart, group: list[Chart], prefix: str) -> None:
        self.source, self.group, self.prefix = source, group, prefix
        self.border_title = f"{prefix} · {source.chart_name}"
        self.border_subtitle = "← → next chart · y log loss · escape back"
        self.follow()

    def follow(self) -> None:
        """Draw the source's latest plot (the app calls this at each redraw)."""
        chart = self.query_one(ZoomChart)
        if self.source is not None and self.source.data is not None and self.source.data is not chart.data:
            chart.plot(self.source.data)
