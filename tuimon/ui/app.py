"""The Textual app: one panel per run, a comparison strip, a log pane, keys that steer the runs.
Events arriving on another thread are only queued there; the loop folds them between redraws
(ui/folding.py) and a timer redraws a few times a second, so a fast run cannot flood the screen."""

from __future__ import annotations

import contextlib
import gc
import math
import time
from collections.abc import Iterable
from pathlib import Path

from textual.actions import SkipAction
from textual.app import App, ComposeResult, SystemCommand
from textual.containers import Grid
from textual.css.query import NoMatches
from textual.screen import Screen
from textual.widgets import Header, RichLog, Static

from tuimon.report import export
from tuimon.ui import keys
from tuimon.ui.folding import Folder
from tuimon.ui.log_pane import LogTail
from tuimon.ui.model import RunLive, SessionModel
from tuimon.ui.report_export import ReportWriter
from tuimon.ui.screens import HelpScreen
from tuimon.ui.steering import Steering
from tuimon.ui.views import Views
from tuimon.ui.widgets.comparison import ComparisonStrip
from tuimon.ui.widgets.compile_pane import CompilePane, variant_of
from tuimon.ui.widgets.footer import KeyFooter
from tuimon.ui.widgets.overlay import OverlayView
from tuimon.ui.widgets.profiler_pane import ProfilerPane, last_capture
from tuimon.ui.widgets.rank_view import open_ranks, refresh_ranks
from tuimon.ui.widgets.run_panel import RunPanel
from tuimon.ui.widgets.why_pane import WhyPane
from tuimon.ui.widgets.zoom import ZoomView

MAX_COLUMNS = 3
GC_THRESHOLDS = (10_000, 50, 100)
STAGGER_FPS = 4  # from this redraw rate, half the charts a redraw: each still follows at >= 2 Hz


class TuimonApp(Steering, App[str]):
    CSS_PATH = "app.tcss"
    TITLE = "tuimon"
    AUTO_FOCUS = None
    BINDINGS = keys.BINDINGS  # every key, its help line and palette entry: ui/keys.py
    KEYS = keys.HELP
    CHANGES_RUNS = keys.CHANGES_RUNS

    def __init__(self, source, fps: float = 4.0, title: str | None = None,
                 note: str | None = None) -> None:
        super().__init__()
        self.source = source
        self.note = note  # said once when the app opens (e.g. attach fell back to read-only)
        self.fps = fps
        self.model = SessionModel()
        self.folder = Folder(self)  # events into the model, between redraws
        self.session_path: Path = source.path
        self.sub_title = title or self.session_path.name
        self.log_tail = LogTail()  # l: the focused run's log
        self.backward_next = False  # b: backward attribution for the next capture
        self.log_loss = False  # y: loss charts on a log axis
        self.views = Views(self)  # panels, overlay (o), zoom (z)
        self.report = ReportWriter(self._report_written)  # e: report.html, in a child process
        self._strip_shown: tuple | None = None
        self._ticks = 0

    # ---- layout ----------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield Header()
        yield Static("waiting for the first run…", id="empty")
        yield Grid(id="panels")
        yield OverlayView(id="overlay")
        yield ZoomView(id="zoom")
        yield ComparisonStrip(id="comparison")
        yield CompilePane(id="compile")
        yield ProfilerPane(id="profiler")
        yield WhyPane(id="why")
        yield RichLog(id="log", max_lines=2000, wrap=False, markup=False)
        yield KeyFooter()

    def on_mount(self) -> None:
        # What exists now lives as long as the app: the garbage collector need not walk it
        # again; and young objects are collected 10 000 at a time, not 700. At 4 runs x 1 000
        # steps/s this takes collection pauses from ~75 ms a second (up to 400 ms each) to
        # ~10 (at most ~30): bench/RESULTS.md, UI budget.
        self._gc_before = gc.get_threshold()
        gc.freeze()
        gc.set_threshold(*GC_THRESHOLDS)
        self.query_one("#log", RichLog).can_focus = False  # focus moves between panels only
        self.source.start(self.folder.deliver)
        self.set_interval(1.0 / self.fps, self.tick)
        if self.note:
            self.notify(self.note, timeout=15)

    def on_unmount(self) -> None:
        gc.unfreeze()  # as it was (several apps in one process: tests)
        gc.set_threshold(*self._gc_before)

    # ---- the redraw tick -----------------------------------------------------------------
    def tick(self) -> None:
        """A redraw: what was folded since the last one, on screen (folding is not its job);
        at STAGGER_FPS or more, each chart every other tick (ui/views.py)."""
        self._ticks += 1
        self.redraw(half=self._ticks % 2 if self.fps >= STAGGER_FPS else None)
        refresh_ranks(self)
        self.call_after_refresh(self.folder.after_frame)  # the numbers, between frames

    def folded(self, batch: list[dict], ended: str | None) -> None:
        """What a folded batch has to say at once (ui/folding.py calls this)."""
        if self.model.ended and not ended and not self.source.read_only:
            # Said once: e.g. another viewer quit with stop, or every run ended.
            self.notify(f"the session has ended ({self.model.ended}); q quits", timeout=30)
        for e in batch:  # the source's own news: unreadable lines, a store that failed
            if e.get("notify") and e.get("type") == "warning":
                self.notify(e["text"], severity=e["notify"], timeout=30)

    def redraw(self, half: int | None = None) -> None:
        """Everything on screen (a key's redraw), or, with ``half`` (the timer's), the charts of
        that half of the panels and of the overlay only: ui/views.py."""
        # One queued by call_after_refresh can run as the app tears its widgets down.
        with contextlib.suppress(NoMatches):
            self._redraw(half)

    def _redraw(self, half: int | None = None) -> None:
        now = time.time()
        grid = self.query_one("#panels", Grid)
        panels = list(grid.query(RunPanel))
        runs = self.model.panel_runs()
        if len(panels) != len(runs):
            self._relayout(grid, panels, len(runs))
            self.call_after_refresh(self.redraw)  # new panels draw once they are composed
            return
        # During a fast stream the numbers follow every second at most, or every 100 times what
        # the summary costs (<= 1 % of a core), computed on a thread between frames
        # (ui/folding.py); the charts, from the model, follow every redraw.
        summary = self.model.latest_summary()
        by_run = {r.run: r for r in summary.runs}
        self.views.draw(panels, runs, by_run, now, self.log_loss, half)  # what is on screen
        self.query_one("#empty").display = not runs
        if (summary, self.model.gpu_note) != self._strip_shown:  # it changes when the numbers do
            self._strip_shown = (summary, self.model.gpu_note)
            self.query_one(ComparisonStrip).show(summary, self.model.gpu_note)
        state = self.model.ended or ("replay" if self.source.read_only else "live")
        self.sub_title = f"{self.session_path.name} · {state}"
        self._tail_log()
        pane = self.query_one(CompilePane)
        if pane.has_class("visible"):
            live = self.focused_run()
            pane.show(live, by_run.get(live.run) if live else None,
                      variant_of(summary.variants, live.run) if live else None)
        profiler = self.query_one(ProfilerPane)
        if profiler.has_class("visible"):
            live = self.focused_run()
            profiler.show(live, self._compare_with(live), self.backward_next)
        self.query_one(WhyPane).show(self.focused_run(), summary)  # when visible

    def _relayout(self, grid: Grid, panels: list[RunPanel], count: int) -> None:
        for panel in panels[count:]:
            panel.remove()
        if count > len(panels):
            grid.mount_all(RunPanel(run) for run in self.model.panels[len(panels):])
        columns = min(max(count, 1), MAX_COLUMNS)
        grid.styles.grid_size_columns = columns
        grid.styles.grid_size_rows = max(1, math.ceil(count / columns))
        if self.focused is None and count:
            self.call_after_refresh(self._focus_first)

    def _focus_first(self) -> None:
        panels = self.query(RunPanel)
        if panels:
            panels.first().focus()

    # ---- which run the keys act on ---------------------------------------------------------
    def focused_run(self) -> RunLive | None:
        widget = self.focused
        if not isinstance(widget, RunPanel) and self.views.panel in self.query(RunPanel):
            widget = self.views.panel  # in the overlay or the zoom: the panel focused last
        if isinstance(widget, RunPanel):
            return self.model.runs.get(widget.run)
        runs = self.model.panel_runs()
        return runs[0] if runs else None

    # ---- views: panels, overlay (o), zoom (z): ui/views.py ------------------------------
    def action_overlay(self) -> None:
        self.views.toggle_overlay()
        self.redraw()

    def action_zoom(self) -> None:
        if (why := self.views.zoom(self.focused)) is not None:
            self.notify(why, severity="warning")
        self.redraw()

    def action_back(self) -> None:
        self.views.back()
        self.redraw()

    def action_log_loss(self) -> None:
        self.log_loss = not self.log_loss
        self.redraw()
        self.notify(f"loss charts: {'log' if self.log_loss else 'linear'} y axis", timeout=3)

    def check_action(self, action: str, parameters: tuple) -> bool | None:
        if action in self.CHANGES_RUNS and self.source.read_only:
            return None  # shown greyed out in the footer and refused
        return True

    # ---- actions -----------------------------------------------------------------------
    def action_export(self) -> None:
        try:
            written = export.write_all(self.session_path)
        except OSError as exc:
            self.notify(f"export failed: {exc}", severity="error")
            return
        if self.report.start(self.session_path):
            self.notify(f"summary written: {written['md']}; report.html is being written (a few "
                        "seconds: you are told when it is there)", timeout=8)
        else:
            self.notify(f"summary written: {written['md']}; report.html is still being written",
                        timeout=8)

    def _report_written(self, line: str, error: bool) -> None:
        """The report's one line (from its waiting thread), as a notice on the UI's loop."""
        if not self.is_running:  # the app has closed meanwhile (the page is written all the same)
            return
        with contextlib.suppress(RuntimeError):  # ... or closes just now
            self.call_from_thread(self.notify, line, severity="error" if error else "information",
                                  timeout=10)

    def action_toggle_log(self) -> None:
        log = self.query_one("#log", RichLog)
        log.toggle_class("visible")
        self.log_tail.forget()  # reload for the focused run
        self._tail_log()

    def action_toggle_compile(self) -> None:
        self.query_one(CompilePane).toggle_class("visible")
        self.redraw()

    def action_toggle_profiler(self) -> None:
        self.query_one(ProfilerPane).toggle_class("visible")
        self.redraw()

    def action_toggle_why(self) -> None:
        self.query_one(WhyPane).toggle_class("visible")
        self.redraw()

    def action_why_cursor(self, step: int) -> None:
        """↑ ↓ in the why pane: another finding; with the pane shut the key is not ours."""
        pane = self.query(WhyPane)
        if not pane or not pane.first().has_class("visible"):
            raise SkipAction()
        pane.first().move(step)
        self.redraw()

    def action_toggle_backward(self) -> None:
        self.backward_next = not self.backward_next
        self.notify(f"backward attribution for the next capture: {'on' if self.backward_next else 'off'}")

    def _compare_with(self, live: RunLive | None) -> RunLive | None:
        """Another run's capture to put beside this one: its eager baseline first."""
        if live is None:
            return None
        others = [r for r in self.model.runs.values() if r.run != live.run and last_capture(r)]
        others.sort(key=lambda r: (r.mode != "eager" or live.mode == "eager",
                                   r.precision != live.precision))
        return others[0] if others else None

    def action_ranks(self) -> None:
        open_ranks(self, self._steer())

    def action_help(self) -> None:
        self.push_screen(HelpScreen(self.KEYS, self.source.read_only))

    # ---- log pane --------------------------------------------------------------------------
    def _tail_log(self) -> None:
        live = self.focused_run()
        self.log_tail.show(self.query_one("#log", RichLog), live.run if live else None,
                           live.label if live else "", self.source.log_path(live.run) if live else None)

    # ---- command palette -------------------------------------------------------------------
    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        yield from keys.palette(self, self.source.read_only)
