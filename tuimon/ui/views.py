"""Which view fills the screen: the panels, the overlay (key o) or one chart zoomed (key z;
escape returns). Views switch by showing and hiding a few widgets, never by a class on the
screen, which would restyle every widget (a tenth of a second on a busy machine). Each timer
redraw draws half the panels' charts, the halves in turn (docs/tui.md#redraws)."""

from __future__ import annotations

from textual.app import App

from tuimon.ui.widgets.chart import Chart
from tuimon.ui.widgets.overlay import OverlayView
from tuimon.ui.widgets.run_panel import RunPanel
from tuimon.ui.widgets.zoom import ZoomView

ZOOM_HIDES = ("#panels", "#overlay", "#comparison", "#compile", "#profiler", "#log")
PANES = ("#compile", "#profiler", "#log")  # shown or not by their own class (c, P, l)


class Views:
    def __init__(self, app: App) -> None:
        self.app = app
        self.current = "panels"  # panels | overlay | zoom
        self.under_zoom = "panels"  # the view escape returns to from the zoom
        self.panel: RunPanel | None = None  # the panel focused last: the keys act on its run

    def draw(self, panels: list[RunPanel], runs: list, by_run: dict, now: float, log_loss: bool,
             half: int | None = None) -> None:
        """Fills what is on screen: the panels, the overlay, or the zoomed chart's source;
        with ``half`` (0 or 1), only that half's charts."""
        model, zoom = self.app.model, self.app.query_one(ZoomView)
        overlay = self.app.query_one(OverlayView)
        view = self.current
        for k, (panel, live) in enumerate(zip(panels, runs, strict=True)):
            zoomed = view == "zoom" and zoom.source in panel.charts()
            if view == "panels" or zoomed:
                charts = half is None or zoomed or k % 2 == half
                panel.show(live, by_run.get(live.run), now, model, log_loss, charts=charts)
        if view == "overlay" or (view == "zoom" and zoom.source in overlay.charts()):
            overlay.show(model, runs, log_loss, None if view == "zoom" else half)
        if view == "zoom":
            zoom.follow()

    def _show(self, view: str) -> None:
        if self.current == "panels" and isinstance(self.app.focused, RunPanel):
            self.panel = self.app.focused  # hidden, it loses focus: the keys still act on it
        q = self.app.query_one
        if view == "zoom":
            for selector in ZOOM_HIDES:
                q(selector).display = False
            q("#zoom").display = True
        else:
            q("#zoom").display = False
            for selector in PANES:
                q(selector).styles.clear_rule("display")
            q("#comparison").display = True
            q("#panels").display = view == "panels"
            q("#overlay").display = view == "overlay"
        self.current = view

    def toggle_overlay(self) -> None:
        if self.current == "zoom":
            self.back()
        self._show("panels" if self.current == "overlay" else "overlay")
        self._refocus()

    def zoom(self, focused) -> str | None:
        """Zooms the focused overlay chart, or the focused panel's step-time chart; the
        reason when there is none."""
        zoom = self.app.query_one(ZoomView)
        if self.current == "zoom":
            self.back()
            return None
        overlay = self.app.query_one(OverlayView).charts()
        if focused in overlay:
            zoom.zoom(focused, overlay, "all runs")
        else:
            panel = focused if isinstance(focused, RunPanel) else self.panel
            if panel not in self.app.query(RunPanel):
                return "no chart to zoom yet"
            live = self.app.model.runs.get(panel.run)
            charts = panel.charts()
            zoom.zoom(charts[0], charts, live.label if live else panel.run)
        self.under_zoom = self.current
        self._show("zoom")
        self.app.call_after_refresh(lambda: self.app.query_one("#zoom Chart").focus())
        return None

    def back(self) -> None:
        if self.current == "zoom":
            source = self.app.query_one(ZoomView).source
            self._show(self.under_zoom)
            if self.current == "overlay" and isinstance(source, Chart) and source.can_focus:
                self.app.call_after_refresh(source.focus)
            else:
                self._refocus()
        elif self.current == "overlay":
            self._show("panels")
            self._refocus()

    def _refocus(self) -> None:
        if self.current == "overlay":
            charts = self.app.query_one(OverlayView).charts()
            if charts:
                self.app.call_after_refresh(charts[0].focus)
        elif self.panel in self.app.query(RunPanel):
            self.app.call_after_refresh(self.panel.focus)
        else:
            panels = self.app.query(RunPanel)
            if panels:
                self.app.call_after_refresh(panels.first().focus)
