"""The profiler pane (key P): the focused run's last capture — top ops by self time, the step
split, per-module forward/backward time, the sync detector's findings and the trace path — with
the same ops of another run's last capture beside it (eager vs compiled)."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from textual.containers import VerticalScroll
from textual.widgets import Static

from tuimon.fmt import fmt_ms
from tuimon.ui.model import RunLive

TOP = 12


class ProfilerPane(VerticalScroll, can_focus=False):  # focus stays on the panels
    def compose(self):
        yield Static(id="profiler-body")

    def show(self, live: RunLive | None, other: RunLive | None, backward_next: bool) -> None:
        self.query_one("#profiler-body", Static).update(render(live, other, backward_next))


def last_capture(live: RunLive | None) -> dict | None:
    return next((p for p in reversed(live.profiles) if p.get("state") == "done"), None) if live else None


def render(live: RunLive | None, other: RunLive | None, backward_next: bool = False):
    hint = Text(f"p: capture a window · b: backward attribution for the next capture "
                f"({'on' if backward_next else 'off'})", style="dim")
    if live is None:
        return Group(Text("profiler: no run focused", style="dim"), hint)
    title = Text(f"profiler: {live.label} ({live.run})", style="bold")
    if live.profiling:
        title.append("  profiling…", style="bold magenta")
    p = last_capture(live)
    if p is None:
        failed = next((x for x in reversed(live.profiles) if x.get("state") == "failed"), None)
        quiet = failed and failed.get("quiet")  # the automatic capture nobody asked for
        what = "the automatic capture recorded nothing" if quiet else "capture failed"
        note = f"{what}: {failed.get('error')}" if failed else "no capture yet"
        return Group(title, Text(note, style="dim"), hint)
    o = last_capture(other)
    split = p.get("split") or {}
    head = Text(f"capture {p.get('capture')}: steps {p.get('active_steps')}, "
                f"{fmt_ms(p.get('step_ms'))} a step — data {fmt_ms(split.get('data_ms'))} · "
                f"forward {fmt_ms(split.get('forward_ms'))} · backward {fmt_ms(split.get('backward_ms'))}"
                f" · optimizer {fmt_ms(split.get('optimizer_ms'))}")
    table = Table(box=None, pad_edge=False, show_edge=False)
    table.add_column("op", no_wrap=True, max_width=36)
    for col in ("calls", "self/step", "total/step", "share"):
        table.add_column(col, justify="right", no_wrap=True)
    if o is not None and other is not None:
        table.add_column(f"self · {other.label}", justify="right", no_wrap=True)
    theirs = {row["name"]: row for row in (o or {}).get("top_ops", [])}
    for row in p.get("top_ops", [])[:TOP]:
        cells = [row["name"], f"{row['calls']:g}", fmt_ms(row["self_ms"]), fmt_ms(row["total_ms"]),
                 f"{row['share']:.0%}"]
        if o is not None:
            match = theirs.get(row["name"])
            cells.append(fmt_ms(match["self_ms"]) if match else "–")
        table.add_row(*cells)
    parts: list[RenderableType] = [title, head, table]
    modules = [m for m in p.get("modules", []) if m.get("backward_ms") or m.get("forward_ms")]
    if modules:
        line = Text("modules (fwd / bwd): ", style="bold")
        line.append(" · ".join(f"{m['name']} {fmt_ms(m.get('forward_ms'))}/{fmt_ms(m.get('backward_ms'))}"
                               for m in modules[:8]))
        parts.append(line)
    syncs = [s for s in p.get("syncs", []) if not s.get("ours")]
    if syncs:
        parts.append(Text(f"syncs and scalar reads ({p.get('sync_count', len(syncs))} a step):",
                          style="bold yellow"))
        parts += [Text(f"  {s.get('op')} ×{s.get('count')} at {s.get('where')} ({s.get('kind')})")
                  for s in syncs[:6]]
    if p.get("trace"):
        parts.append(Text(f"trace: {p['trace']}", style="dim"))
    parts.append(hint)
    return Group(*parts)
