"""The compile pane (key c): the focused run's compiles with their phase breakdown as bars,
its graph breaks with reasons and locations, its recompiles, the Inductor cache status, and
how its compile started (cold, or warm from compile artifacts) beside its variant's other
start, with the reasons a warm start missed."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from textual.containers import VerticalScroll
from textual.widgets import Static

from tuimon.analysis import RunStats, made_graph
from tuimon.fmt import fmt_s
from tuimon.report.miss_text import miss_text
from tuimon.report.table import cache_text, compile_cache
from tuimon.report.warm_text import artifacts_text, per_start
from tuimon.ui.model import RunLive

PHASE_STYLE = {"dynamo": "cyan", "aot": "magenta", "inductor": "yellow", "codegen": "green",
               "backward": "blue"}
BAR = 32


class CompilePane(VerticalScroll, can_focus=False):  # focus stays on the panels
    def compose(self):
        yield Static(id="compile-body")

    def show(self, live: RunLive | None, stats: RunStats | None, variant: RunStats | None = None) -> None:
        self.query_one("#compile-body", Static).update(render(live, stats, variant))


def variant_of(rows: list[RunStats], run: str) -> RunStats | None:
    """The combined row (--repeats) whose processes include ``run``."""
    return next((v for v in rows if any(p["run"] == run for p in v.processes)), None)


def starts(r: RunStats | None, variant: RunStats | None) -> list[Text]:
    """How this run's compile started, and its variant's cold and warm side by side."""
    if r is None or not r.warm.start:
        return []
    t = Text("start: ", style="bold")
    t.append(r.warm.start)
    if r.warm.seed:
        t.append(f" from {r.warm.seed}'s artifacts", style="dim")
    t.append(f" · {artifacts_text(r)}" if artifacts_text(r) != "–" else "")
    out = [t]
    if variant is not None and len(variant.warm.starts) > 1:
        compile_s = per_start(lambda x: fmt_s(x.compile.compile_s))(variant)
        pays = per_start(lambda x: fmt_s(x.compare.breakeven_s) if x.compare.breakeven_s is not None
                         else "–")(variant)
        out.append(Text(f"{variant.label}, {len(variant.processes)} processes: compile {compile_s}; "
                        f"pays off after {pays}"))
    reasons = (variant.warm.miss_reasons if variant is not None else []) or r.warm.miss_reasons
    if reasons:
        out.append(Text("why the warm start was not all warm:", style="bold"))
        out += [Text(f"  {miss_text(x)}") for x in reasons]
    out += [Text(f"note: {x}", style="dim") for x in r.warm.artifact_notes]
    return out


def legend() -> Text:
    t = Text("phases: ")
    for name, style in PHASE_STYLE.items():
        t.append("■ ", style=style)
        t.append(f"{name}  ")
    return t


def bar(phases: dict[str, float], total: float, scale: float) -> Text:
    t = Text()
    for name, style in PHASE_STYLE.items():
        seconds = phases.get(name, 0.0)
        width = round(seconds / scale * BAR) if scale else 0
        t.append("█" * width, style=style)
    other = max(0.0, total - sum(phases.values()))
    if scale and other / scale * BAR >= 1:
        t.append("░" * round(other / scale * BAR), style="dim")
    return t


def render(live: RunLive | None, r: RunStats | None, variant: RunStats | None = None):
    if live is None:
        return Text("compile pane: no run focused", style="dim")
    title = Text(f"compiles of {live.label} ({live.run})", style="bold")
    if live.mode == "eager":
        return Group(title, Text("eager: nothing is compiled", style="dim"))
    compiles = list(live.compiles)
    if not compiles:
        return Group(title, Text("no compile finished yet" + (
            f" · now: {live.compile_phase}" if live.compile_phase else ""), style="dim"))
    total = sum(c.get("seconds") or 0 for c in compiles)
    eager = sum(1 for c in compiles if not made_graph(c))  # tried, no graph: the frame ran eager
    made = len(compiles) - eager
    head = Text(f"{made} compile{'' if made == 1 else 's'}, {fmt_s(total)} in all"
                + (f" · {eager} tried that made no graph (ran eager)" if eager else ""))
    if r is not None:
        head.append(f" · cache {cache_text(r)}")
    table = Table(box=None, pad_edge=False, expand=False, show_edge=False)
    for col in ("id", "graph", "time", "phases", "ops", "guards", "cache"):
        table.add_column(col, no_wrap=True, justify="right" if col in ("time", "ops", "guards") else "left")
    scale = max((c.get("seconds") or 0) for c in compiles) or 1.0
    for c in compiles:
        forward = c.get("forward", True)
        phases = dict(c.get("phases") or {}) if forward else {"backward": c.get("seconds") or 0.0}
        frame = str(c.get("frame")).replace("torch_dynamo_resume_in_", "resume:")
        graph = f"{frame}()" if forward else "backward"
        if c.get("where"):
            graph += f" {c['where'].rsplit('/', 1)[-1]}"
        if c.get("validation"):  # a script's validation pass: not training's (stats/compiles.py)
            graph = f"val: {graph}"
        if not made_graph(c):
            graph = f"eager: {graph}"
        table.add_row(str(c.get("compile_id")), graph[:40], fmt_s(c.get("seconds")),
                      bar(phases, c.get("seconds") or 0.0, scale), str(c.get("graph_ops") or "–"),
                      str(c.get("guards") or "–"), compile_cache(c))
    parts: list[RenderableType] = [title, head, *starts(r, variant), legend(), table]
    if r is not None and r.compile.graph_breaks:
        parts.append(Text(f"graph breaks ({len(r.compile.graph_breaks)}):", style="bold"))
        parts += [Text(f"  {b['where']} ×{b['count']}: {b['reason']}") for b in r.compile.graph_breaks]
    recompiles = list(live.recompiles)
    if recompiles:
        parts.append(Text(f"recompiles ({len(recompiles)}):", style="bold"))
        parts += [Text(f"  {e.get('compile_id')}{' (validation)' if e.get('validation') else ''}: "
                       f"{'; '.join(e.get('reasons') or [])}") for e in recompiles[-10:]]
    return Group(*parts)
