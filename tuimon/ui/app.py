"""The Textual app: one panel per run, a comparison strip, a log pane, keys that steer the runs.

Events arrive on another thread (the supervisor's, or the replay reader's) and are only
appended to a deque there; a timer drains it a few times a second, folds it into the model
and redraws. Nothing is drawn per event, so a fast run cannot flood the screen.
"""

from __future__ import annotations

import contextlib
import gc
import math
import time
from collections import deque
from collections.abc import Iterable
from pathlib import Path

from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding
from textual.containers import Grid
from textual.css.query import NoMatches
from textual.screen import Screen
from textual.widgets import Header, RichLog, Static

from tuimon.session import export
from tuimon.ui.add_screen import AddScreen
from tuimon.ui.model import RunLive, SessionModel
from tuimon.ui.screens import HelpScreen, QuitScreen
from tuimon.ui.views import Views
from tuimon.ui.widgets.comparison import ComparisonStrip
from tuimon.ui.widgets.compile_pane import CompilePane
from tuimon.ui.widgets.footer import KeyFooter
from tuimon.ui.widgets.overlay import OverlayView
from tuimon.ui.widgets.profiler_pane import ProfilerPane, last_capture
from tuimon.ui.widgets.rank_view import open_ranks, refresh_ranks
from tuimon.ui.widgets.run_panel import RunPanel
from tuimon.ui.widgets.why_pane import WhyPane
from tuimon.ui.widgets.zoom import ZoomView
from tuimon.variants import MODES, SCRIPT, Variant, choices

MAX_COLUMNS = 3
LOG_LINES = 200
GC_THRESHOLDS = (10_000, 50, 100)
SUMMARY_EVERY = 1.0  # seconds: the least age of the numbers shown while events stream in


class TuimonApp(App[str]):
    CSS_PATH = "app.tcss"
    TITLE = "tuimon"
    AUTO_FOCUS = None
    BINDINGS = [
        Binding("m", "mode(1)", "mode→", tooltip="next compile mode of the focused panel"),
        Binding("M", "mode(-1)", "mode←", show=False),
        Binding("a", "precision", "fp32/amp"),
        Binding("r", "restart", "restart"),
        Binding("space", "pause", "pause"),
        Binding("n", "add", "add"),
        Binding("x", "close_panel", "close"),
        Binding("e", "export", "export"),
        Binding("l", "toggle_log", "log"),
        Binding("c", "toggle_compile", "compile"),
        Binding("p", "profile", "profile"),
        Binding("P", "toggle_profiler", "profiler", show=False),
        Binding("w", "toggle_why", "why", show=False),
        Binding("b", "toggle_backward", "bwd attrib.", show=False),
        Binding("d", "dump", "dump stacks", show=False),
        Binding("k", "ranks", "ranks", show=False),
        Binding("left", "focus_previous", "←", show=False),
        Binding("right", "focus_next", "→", show=False),
        Binding("question_mark", "help", "help"),
        Binding("q", "quit_app", "quit"),
        Binding("o", "overlay", "overlay"),  # after help and quit: those stay in the footer
        Binding("z", "zoom", "zoom"),
        Binding("y", "log_loss", "log loss", show=False),
        Binding("escape", "back", "back", show=False),
    ]
    # What each key does, for the help screen and the palette (one source of truth).
    KEYS = [
        ("m / M", "next / previous compile mode of the focused panel (restarts it)"),
        ("a", "toggle the focused panel's precision fp32 ↔ amp (restarts it)"),
        ("r", "restart the focused run"),
        ("space", "pause / resume the focused run (at a step boundary)"),
        ("n", "add a panel: pick a variant not shown yet (modes, precisions, --set axis values)"),
        ("x", "stop the focused run and close its panel"),
        ("e", "export summary.md / .json / steps.csv now"),
        ("l", "show / hide the focused run's log"),
        ("c", "show / hide the compile pane: compiles, phases, graph breaks, recompiles"),
        ("p", "capture a torch.profiler window of the focused run (opens the profiler pane)"),
        ("P", "show / hide the profiler pane: top ops, step split, modules, syncs, trace"),
        ("b", "backward attribution (module backward spans) on / off for the next capture"),
        ("w", "show / hide why compile did not help the focused variant: findings, evidence, what to try"),
        ("d", "dump the focused run's Python stacks into its log (a run that seems hung); l shows it"),
        ("o", "overlay: every run on one chart (by step, by wall time, loss, CPU / GPU); o again: panels"),
        ("z", "zoom the focused chart full screen (← → next chart); escape returns"),
        ("y", "loss charts: log / linear y axis"),
        ("escape", "back from the zoom or the overlay"),
        ("k", "rank view of the focused torchrun job: one row per rank (k or escape: back)"),
        ("tab ← →", "move focus between panels (between charts in the overlay)"),
        ("?", "this help"),
        ("q", "quit: stop the runs, or detach and leave them running (tuimon attach)"),
    ]
    CHANGES_RUNS = {"mode", "precision", "restart", "pause", "add", "close_panel", "profile", "dump"}

    def __init__(self, source, fps: float = 4.0, title: str | None = None,
                 note: str | None = None) -> None:
        super().__init__()
        self.source = source
        self.note = note  # said once when the app opens (e.g. attach fell back to read-only)
        self.fps = fps
        self.model = SessionModel()
        self.inbox: deque = deque()
        self.session_path: Path = source.path
        self.sub_title = title or self.session_path.name
        self._log_run: str | None = None
        self._log_offset = 0
        self.backward_next = False  # b: backward attribution for the next capture
        self.log_loss = False  # y: loss charts on a log axis
        self.views = Views(self)  # panels, overlay (o), zoom (z)
        self._strip_shown: tuple | None = None

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
        self.source.start(self.inbox.append)
        self.set_interval(1.0 / self.fps, self.tick)
        if self.note:
            self.notify(self.note, timeout=15)

    def on_unmount(self) -> None:
        gc.unfreeze()  # as it was (several apps in one process: tests)
        gc.set_threshold(*self._gc_before)

    # ---- the redraw tick -----------------------------------------------------------------
    def tick(self) -> None:
        batch = []
        while self.inbox and not self.model.busy:  # busy: the summary is being computed
            batch.extend(self.inbox.popleft())
        if batch:
            ended = self.model.ended
            self.model.add_all(batch)
            if self.model.ended and not ended and not self.source.read_only:
                # Said once: e.g. another viewer quit with stop, or every run ended.
                self.notify(f"the session has ended ({self.model.ended}); q quits", timeout=30)
            for e in batch:  # the source's own news: unreadable lines, a store that failed
                if e.get("notify") and e.get("type") == "warning":
                    self.notify(e["text"], severity=e["notify"], timeout=30)
        self.redraw()
        refresh_ranks(self)

    def redraw(self) -> None:
        # One queued by call_after_refresh can run as the app tears its widgets down.
        with contextlib.suppress(NoMatches):
            self._redraw()

    def _redraw(self) -> None:
        now = time.time()
        grid = self.query_one("#panels", Grid)
        panels = list(grid.query(RunPanel))
        runs = self.model.panel_runs()
        if len(panels) != len(runs):
            self._relayout(grid, panels, len(runs))
            self.call_after_refresh(self.redraw)  # new panels draw once they are composed
            return
        # During a fast stream the numbers follow every second at most, or every 100 times what
        # the summary costs (<= 1 % of a core), computed on a thread; the charts, from the
        # model, follow every redraw.
        summary = self.model.summary_behind(max(SUMMARY_EVERY, 100 * self.model.summary_cost))
        by_run = {r.run: r for r in summary.runs}
        self.views.draw(panels, runs, by_run, now, self.log_loss)  # what is on screen
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
            pane.show(live, by_run.get(live.run) if live else None)
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

    def _steer(self) -> RunLive | None:
        live = self.focused_run()
        if live is None:
            self.notify("no run to act on yet", severity="warning")
        return live

    def _command(self, name: str, *args):
        """A command to the source and its result; a refusal or a lost supervisor is a notice,
        not a crash (and None)."""
        return self._send(name, *args)[1]

    def _send(self, name: str, *args, **kwargs) -> tuple[bool, object]:
        """(whether the command went through, its result). The daemon may be gone even while
        the model still shows runs going: another viewer stopped the session, or it was killed."""
        try:
            return True, getattr(self.source, name)(*args, **kwargs)
        except Exception as exc:  # noqa: BLE001 - e.g. the detached supervisor has gone
            self.notify(f"{name} failed: {exc}", severity="error")
            return False, None

    # ---- actions -----------------------------------------------------------------------
    def action_mode(self, step: int) -> None:
        if (live := self._steer()) is None:
            return
        mode = MODES[(MODES.index(live.mode) + step) % len(MODES)] if live.mode in MODES else MODES[0]
        variant = live.variant.but(mode=mode)
        if (new := self._command("restart", live.run, variant)) is None:
            return
        self.notify(f"{live.label} → {variant.label} ({new})")

    def action_precision(self) -> None:
        if (live := self._steer()) is None:
            return
        if live.precision == SCRIPT:
            self.notify("a script owns its precision (its own autocast): tuimon does not toggle it",
                        severity="warning")
            return
        variant = live.variant.but(precision="amp" if live.precision == "fp32" else "fp32")
        if (new := self._command("restart", live.run, variant)) is None:
            return
        self.notify(f"{live.label} → {variant.label} ({new})")

    def action_restart(self) -> None:
        if (live := self._steer()) is None:
            return
        if (new := self._command("restart", live.run, live.variant)) is None:
            return
        self.notify(f"restarting {live.label} as {new}")

    def action_pause(self) -> None:
        if (live := self._steer()) is None:
            return
        if live.state == "paused":
            self._command("resume", live.run)
            self.notify(f"resuming {live.label}")
        elif live.active:
            self._command("pause", live.run)
            self.notify(f"pausing {live.label} at the next step boundary")
        else:
            self.notify(f"{live.label} has ended; r restarts it", severity="warning")

    def action_add(self) -> None:
        """Offer the variants not shown (variants.choices); the one picked gets a panel."""
        focused = self.focused_run()
        offered = choices({r.variant for r in self.model.panel_runs()},
                          focused.variant if focused else None, self.model.summary().axes)

        def picked(variant: Variant | None) -> None:
            if variant is not None and (new := self._command("add", variant)) is not None:
                self.notify(f"added {variant.label} ({new})")

        self.push_screen(AddScreen(offered), picked)

    def action_close_panel(self) -> None:
        if (live := self._steer()) is None:
            return
        if live.active:
            self._command("stop", live.run)
        self.model.close_panel(live.run)
        self.notify(f"closed {live.label}; its run stays in the session and the summary")

    def action_export(self) -> None:
        try:
            written = export.write_all(self.session_path)
        except OSError as exc:
            self.notify(f"export failed: {exc}", severity="error")
            return
        self.notify(f"summary written: {written['md']}", timeout=8)

    def action_toggle_log(self) -> None:
        log = self.query_one("#log", RichLog)
        log.toggle_class("visible")
        self._log_run = None  # reload for the focused run
        self._tail_log()

    def action_toggle_compile(self) -> None:
        self.query_one(CompilePane).toggle_class("visible")
        self.redraw()

    def _steer_live(self) -> RunLive | None:
        """The focused run, if it is still going (capture and dump need a live process)."""
        live = self._steer()
        if live is not None and not live.active:
            self.notify(f"{live.label} has ended", severity="warning")
            return None
        return live

    def action_profile(self) -> None:
        if (live := self._steer_live()) is None:
            return
        options = {"backward": True} if self.backward_next else {}
        if not self._send("profile", live.run, **options)[0]:
            return
        self.query_one(ProfilerPane).add_class("visible")
        self.notify(f"profiling {live.label} from its next step boundary"
                    f"{' with backward attribution' if self.backward_next else ''}")

    def action_dump(self) -> None:
        if (live := self._steer_live()) is None:
            return
        if not self._send("dump", live.run)[0]:
            return
        log = self.query_one("#log", RichLog)
        log.add_class("visible")
        self.notify(f"{live.label}: Python stacks written to its log (shown below)")

    def action_toggle_profiler(self) -> None:
        self.query_one(ProfilerPane).toggle_class("visible")
        self.redraw()

    def action_toggle_why(self) -> None:
        self.query_one(WhyPane).toggle_class("visible")
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

    def action_quit_app(self) -> None:
        active = [r for r in self.model.runs.values() if r.active]
        if self.source.read_only or not active or self.model.ended:
            self._stop_and_exit()
            return

        def answered(choice: str | None) -> None:
            if choice == "stop":
                self.notify("stopping the runs…")
                self._stop_and_exit()
            elif choice == "detach":
                self.source.detach()
                self.exit("detached")

        self.push_screen(QuitScreen(len(active), can_detach=hasattr(self.source, "detach")), answered)

    def _stop_and_exit(self) -> None:
        self.run_worker(self._close_source, thread=True, exclusive=True, group="shutdown")

    def _close_source(self) -> None:
        self.source.close()
        self.call_from_thread(self.exit, self.model.ended or "closed")

    # ---- log pane --------------------------------------------------------------------------
    def _tail_log(self) -> None:
        log = self.query_one("#log", RichLog)
        if not log.has_class("visible"):
            return
        live = self.focused_run()
        if live is None:
            return
        path = self.source.log_path(live.run)
        if live.run != self._log_run:
            self._log_run, self._log_offset = live.run, 0
            log.clear()
            log.write(f"── {live.label} ({live.run}): {path}")
            try:
                size = path.stat().st_size
            except OSError:
                size = 0
            self._log_offset = max(0, size - 64 * 1024)
        try:
            with open(path, "rb") as f:
                f.seek(self._log_offset)
                data = f.read()
        except OSError:
            return
        self._log_offset += len(data)
        for line in data.decode("utf-8", "replace").splitlines()[-LOG_LINES:]:
            log.write(line)

    # ---- command palette -------------------------------------------------------------------
    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        actions = {"m / M": "mode(1)", "a": "precision", "r": "restart", "space": "pause",
                   "n": "add", "x": "close_panel", "e": "export", "l": "toggle_log",
                   "c": "toggle_compile", "p": "profile", "P": "toggle_profiler",
                   "b": "toggle_backward", "w": "toggle_why", "d": "dump", "o": "overlay", "z": "zoom",
                   "y": "log_loss", "escape": "back", "k": "ranks",
                   "?": "help", "q": "quit_app"}
        for key, text in self.KEYS:
            action = actions.get(key)
            if action is None or (self.source.read_only and action.split("(")[0] in self.CHANGES_RUNS):
                continue
            yield SystemCommand(f"{text} [{key}]", text,
                                lambda action=action: self.run_action(action))
