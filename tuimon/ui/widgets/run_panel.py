"""One run's panel: state, the big numbers, step-time and loss charts (or the compile under
way), system metrics. Its children are stacked in ``compose``: add a child there, and fill it in
``show``."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.geometry import Region
from textual.widgets import Static

from tuimon.analysis import RunStats
from tuimon.fmt import fmt_bytes, fmt_ms, fmt_rate, fmt_s
from tuimon.report import memory_text
from tuimon.report.table import breakeven_text
from tuimon.ui.model import RunLive, SessionModel
from tuimon.ui.widgets.chart import Chart
from tuimon.ui.widgets.compile_bar import CompileBar
from tuimon.ui.widgets.phase_bar import PhaseBar
from tuimon.ui.widgets.plots import loss_plot, step_plot
from tuimon.ui.widgets.rank_strip import RankStrip
from tuimon.ui.widgets.redraw import update

STATE_STYLE = {"failed": "bold red", "done": "green", "stopped": "yellow", "paused": "yellow",
               "compiling": "bold magenta", "steady": "bold green", "warmup": "cyan"}


class RunPanel(Vertical, can_focus=True):
    """Shows whichever run the model puts in this panel's slot."""

    def __init__(self, run: str) -> None:
        super().__init__(classes="run-panel")
        self.run = run
        self._title: str | None = None
        self._subtitle_state: str | None = None
        self._subtitle_t = 0.0

    def compose(self) -> ComposeResult:
        yield Static(classes="numbers")
        yield PhaseBar()
        yield RankStrip()
        yield CompileBar(classes="compile-bar")
        yield Chart("step time", classes="steps")
        yield Chart("loss", classes="loss")
        yield Static(classes="system")

    _bottom_only = False  # set while the subtitle changes: Textual would repaint the whole panel

    def refresh(self, *regions: Region, repaint: bool = True, layout: bool = False,
                recompose: bool = False):
        outer = self.outer_size
        if self._bottom_only and not regions and not layout and not recompose and outer.height:
            off = self.content_offset  # regions are given from the content's corner
            regions = (Region(-off.x, outer.height - 1 - off.y, outer.width, 1),)
        return super().refresh(*regions, repaint=repaint, layout=layout, recompose=recompose)

    def charts(self) -> list[Chart]:
        return list(self.query(Chart))

    def show(self, live: RunLive, stats: RunStats | None, now: float, model: SessionModel,
             log_loss: bool = False, charts: bool = True) -> None:
        """Its numbers, state and compile bar; its charts too unless ``charts`` is False (a
        redraw of the other half of the panels: ui/views.py)."""
        self.run = live.run
        if not self.children:  # mounted but not composed yet: the next tick draws it
            return
        title = f"{live.label} · {live.device or '…'}"
        if title != self._title:  # setting a border title repaints the whole panel
            self._title = self.border_title = title
        elapsed = live.elapsed(now)
        state = live.state
        if state == "compiling":
            state = compiling_text(live, now)
        if live.profiling:
            state += " · profiling…"
        if live.hung is not None and live.state != "failed":
            state += " · hung"  # stopped while hung, or still silent
        # A new subtitle repaints the whole panel: while only the step count and the clock
        # move, once a second.
        if state != self._subtitle_state or now - self._subtitle_t >= 1.0:
            self._subtitle_state, self._subtitle_t = state, now
            self._bottom_only = True  # the subtitle is in the bottom border: repaint that row
            try:
                self.border_subtitle = f"{state} · {live.steps} steps" + (
                    f" · {fmt_s(elapsed)}" if elapsed is not None else "")
            finally:
                self._bottom_only = False
        self.set_class(live.state == "failed", "failed")
        self.set_class(live.state in ("done", "stopped"), "ended")
        update(self.query_one(".numbers", Static), numbers(live, stats))
        self.query_one(PhaseBar).show(stats)
        self.query_one(RankStrip).show(live, stats)
        compiling = live.state == "compiling"
        bar, steps = self.query_one(CompileBar), self.query_one(".steps", Chart)
        charts = charts or steps.display == compiling  # the chart shows again: drawn at once
        bar.display = compiling
        steps.display = not compiling
        if compiling:
            bar.show(live, now)
        elif charts:
            steps.plot(step_plot(model, live))
        if charts:
            self.query_one(".loss", Chart).plot(loss_plot(model, live, log_loss))
        update(self.query_one(".system", Static), system(live, stats))


def compiling_text(live: RunLive, now: float) -> str:
    """'compiling 1/0 backward · inductor codegen · 23 s'"""
    parts = [f"compiling {live.compile_id or ''}".rstrip()]
    if live.compile_backward:
        parts[0] += " backward"
    if live.compile_phase:
        parts.append(live.compile_phase)
    if live.compile_since is not None:
        parts.append(fmt_s(max(0.0, now - live.compile_since)))
    return " · ".join(parts)


def numbers(live: RunLive, r: RunStats | None) -> Text:
    """Three short lines, so they fit a 36-column panel at 80x24."""
    t = Text()
    if live.error:
        t.append(live.error + "\n", style="bold red")
    if r is None or r.timing.median_ms is None:
        t.append("median –  (warming up)\n", style="dim")
    else:
        t.append("median ", style="dim")
        t.append(fmt_ms(r.timing.median_ms), style="bold")
        t.append(f"  p90 {fmt_ms(r.timing.p90_ms)}\n", style="dim")
        t.append(f"{fmt_rate(r.timing.throughput, r.timing.throughput_unit)}  " if r.timing.throughput
                 else "")
        if r.compare.untold is not None:  # too wide to tell: no figure (the strip says why)
            t.append("cannot tell", style="bold yellow")
        elif r.compare.speedup is not None:
            t.append(f"{r.compare.speedup:.2f}×", style="bold green" if r.compare.speedup >= 1.0
                     else "bold red")
            t.append(f" vs {(r.compare.baseline or '').split('/')[0]}" if r.compare.baseline != r.label
                     else " baseline",
                     style="dim")
        t.append("\n")
    if r is not None and r.compiled:
        t.append("compile ", style="dim")
        t.append(fmt_s(r.compile.compile_s) if r.compile.compile_s is not None else "–")
        if r.warm.start == "warm":  # seeded from compile artifacts (docs/compile.md#warm-start)
            t.append(" warm", style="dim")
        t.append(" · pays off ", style="dim")
        t.append(short_breakeven(r))
    elif r is not None and r.timing.overhead_s is not None:
        t.append(f"warm-up {fmt_s(r.timing.overhead_s)}", style="dim")
    for note in live.notes:
        t.append(f"\nnote: {note}", style="dim italic")
    return t


def short_breakeven(r: RunStats) -> str:
    if r.compare.speedup is None:
        return "–"
    if r.compare.untold is not None:  # the break-even of a speedup too wide to tell
        return "cannot tell"
    if r.compare.breakeven_never:
        return "never"
    if not r.compare.breakeven_steps:
        return breakeven_text(r)
    return f"{r.compare.breakeven_steps:,} steps ≈{fmt_s(r.compare.breakeven_s)}"


def system(live: RunLive, r: RunStats | None = None) -> Text:
    t = Text()
    s = live.sample or {}
    if s.get("cpu_percent") is not None:
        t.append(f"CPU {s['cpu_percent']:.0f}%", style="bold")
    else:
        t.append("CPU –", style="dim")
    if s.get("rss"):
        t.append(f" · RSS {fmt_bytes(s['rss'])}")
    if s.get("descendants"):
        t.append(f" · {s['descendants']} child proc.")
    for d in live.devices:
        t.append(f"\nGPU{d.get('index')} ")
        t.append(f"{d['util_gpu']}%" if d.get("util_gpu") is not None else "n/a", style="bold")
        if d.get("mem_used") is not None and d.get("mem_total"):
            t.append(f" · VRAM {fmt_bytes(d['mem_used'])}/{fmt_bytes(d['mem_total'])}")
            t.append(memory_text.panel_text(r), style="dim")  # fits ~2.0× batch · 1.2 J/step
        if d.get("temp_c") is not None:
            t.append(f" · {d['temp_c']}°C")
        if d.get("power_w") is not None:
            t.append(f" · {d['power_w']:.0f} W")
        active = [x for x in d.get("throttle_reasons") or [] if x != "idle"]
        if active:
            t.append(f" · throttled: {', '.join(active)}", style="bold yellow")
    for w in live.warnings[-2:]:
        t.append(f"\n⚠ {w}", style="yellow")
    return t
