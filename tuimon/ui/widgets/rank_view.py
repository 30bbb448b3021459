"""The rank view (key ``k``): a torchrun job, one row per rank (docs/ranks.md); past
``GROUP_OVER`` ranks, groups (each node's, or blocks of 8) with the ranks worth a row of their
own listed below, ``a`` showing every rank. Own times share one scale from zero, so a
straggler's row stands higher. The numbers are the summary's (analysis/stats/ranks.py); this
only lays them out."""

from __future__ import annotations

import contextlib

from rich.console import JustifyMethod
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.css.query import NoMatches
from textual.screen import Screen
from textual.widgets import Footer, Static

from tuimon.analysis import RunStats, diverging, group_figures
from tuimon.fmt import DASH, fmt_bytes, fmt_loss, fmt_ms
from tuimon.report.rank_text import (
    collectives_matter,
    collectives_text,
    divergence_text,
    skew_text,
    straggler_text,
    world_text,
)
from tuimon.sessiondir.run_state import RankState
from tuimon.ui.model import RunLive

GROUP_OVER = 16  # more ranks than this: grouped rows (``a`` shows them all)
BLOCK = 8  # ranks a group holds on one node
BLOCKS = "▁▂▃▄▅▆▇█"
STATE_STYLE = {"failed": "bold red", "killed": "bold red", "compiling": "magenta",
               "paused": "yellow", "steady": "green", "done": "green", "stopped": "yellow"}


class RankScreen(Screen):
    BINDINGS = [Binding("k,escape", "app.pop_screen", "back"),
                Binding("a", "toggle_all", "all ranks / grouped")]

    def __init__(self, run: str) -> None:
        super().__init__(id="ranks")
        self.run = run
        self.all_ranks: bool | None = None  # None: grouped past GROUP_OVER ranks

    def compose(self) -> ComposeResult:
        yield Static(id="ranks-head")
        with VerticalScroll(id="ranks-body"):
            yield Static(id="ranks-table")
        yield Footer()

    def action_toggle_all(self) -> None:
        self.all_ranks = self.grouped_now  # grouped now: every rank next, and back
        refresh_ranks(self.app)

    @property
    def grouped_now(self) -> bool:
        return self._count > GROUP_OVER if self.all_ranks is None else not self.all_ranks

    _count = 0

    def show(self, live: RunLive | None, stats: RunStats | None,
             own: dict[int, list[float]] | None = None) -> None:
        if live is None or not self.is_mounted:
            return
        self._count = len(live.ranks)
        self.query_one("#ranks-head", Static).update(head(live, stats))
        width = max(6, min(40, self.size.width - 66))
        self.query_one("#ranks-table", Static).update(
            table(live, stats, width, grouped=self.grouped_now, own=own or {}))


def open_ranks(app, live: RunLive | None) -> None:
    """``k``: the rank view of the focused run, if it is a torchrun job."""
    if live is None:
        return
    if not live.ranks:
        app.notify(f"{live.label} is one process, not a torchrun job (k shows a job's ranks)",
                   severity="warning")
        return
    app.push_screen(RankScreen(live.run))
    app.call_after_refresh(refresh_ranks, app)


def refresh_ranks(app) -> None:
    """On the app's redraw tick: the rank view, while it is open (the panels wait underneath)."""
    if isinstance(app.screen, RankScreen):
        run = app.screen.run
        with contextlib.suppress(NoMatches):  # pushed, not composed yet: the next tick draws it
            app.screen.show(app.model.runs.get(run), app.model.stats(run), app.model.rank_own(run))


def head(live: RunLive, stats: RunStats | None) -> Text:
    t = Text(no_wrap=False)
    t.append(f"{live.label}", style="bold")
    if stats is None or not stats.job.world_size:
        t.append(f" · {len(live.ranks)} ranks · {live.state}")
        return t
    t.append(f" · {world_text(stats)} · {live.state}\n")
    t.append("skew ", style="dim")
    t.append(skew_text(stats))
    t.append(" · straggler ", style="dim")
    t.append(straggler_text(stats), style="bold yellow" if stats.job.stragglers else "")
    t.append("\ncompiles across ranks: ", style="dim")
    t.append(divergence_text(stats), style="bold magenta" if stats.job.compile_divergence else "")
    if collectives_matter([stats]):  # FSDP2 on the CPU: each rank's time in its collectives
        t.append("\nFSDP all-gather / reduce-scatter a step: ", style="dim")
        t.append(collectives_text(stats))
    return t


def spark(values: list[float], width: int, lo: float, hi: float) -> str:
    """The last values as blocks on a shared scale; a column holds the highest of its points."""
    if not values:
        return ""
    step = max(1, -(-len(values) // width))
    cols = [max(values[k:k + step]) for k in range(0, len(values), step)][-width:]
    span = hi - lo
    return "".join(BLOCKS[0 if span <= 0 else min(7, max(0, round((v - lo) / span * 7)))]
                   for v in cols)


def table(live: RunLive, stats: RunStats | None, width: int, grouped: bool,
          own: dict[int, list[float]] | None = None) -> Table:
    """``own``: each rank's recent own times (the plot); its recent step times without them."""
    rows = {x["rank"]: x for x in (stats.job.ranks if stats else [])}
    slow = {s["rank"] for s in stats.job.stragglers} if stats else set()
    plots = {k: (own or {}).get(k) or list(live.rank_ms.get(k, ())) for k in live.ranks}
    series = [v for values in plots.values() for v in values]
    lo, hi = (0.0, max(series)) if series else (0.0, 0.0)
    t = Table(box=None, padding=(0, 1), collapse_padding=True, pad_edge=False, expand=False,
              show_edge=False, header_style="bold dim")
    columns: tuple[tuple[str, JustifyMethod], ...] = (
        ("r", "right"), ("state", "left"), ("steps", "right"), ("step", "right"), ("own", "right"),
        ("own, recent", "left"), ("loss", "right"), ("compiles", "left"), ("CPU", "right"), ("GPU", "left"))
    for name, justify in columns:
        t.add_column(name, justify=justify, no_wrap=True)
    if not grouped:
        for k in sorted(live.ranks):
            t.add_row(*_rank_row(live, k, rows.get(k, {}), k in slow, plots[k], width, lo, hi))
        return t
    for label, members in _groups(live, rows):
        t.add_row(*_group_row(live, label, members, rows, slow, plots, width, lo, hi))
    flagged = sorted(k for k in live.ranks if k in slow or live.ranks[k].state in ("failed", "killed")
                     or _diverges(k, stats))
    if flagged:
        t.add_row(*[Text("…", style="dim")] + [""] * 9)
        for k in flagged:
            t.add_row(*_rank_row(live, k, rows.get(k, {}), k in slow, plots[k], width, lo, hi))
    return t


def _rank_row(live: RunLive, k: int, x: dict, straggler: bool, plot: list[float], width: int,
              lo: float, hi: float) -> list:
    r, sample = live.ranks[k], live.rank_samples.get(k) or {}
    style = "bold yellow" if straggler else ""
    own = _ms(x.get("own_ms")) + (f" +{x['slower_pct']:.0f}%" if x.get("slower_pct") else "")
    return [Text(f"{r.rank}", style=style or "bold"),
            Text(r.state if r.state != "paused" or not r.turn else "turn wait",
                 style=STATE_STYLE.get(r.state, "")),
            str(r.steps), _ms(x.get("median_ms")), Text(own, style=style),
            Text(spark(plot, width, lo, hi), style="bold yellow" if straggler else "cyan"),
            fmt_loss(r.loss) if r.loss is not None else DASH,
            _compiles(r, x), _cpu(sample), _gpu(sample)]


def _group_row(live: RunLive, label: str, members: list[int], rows: dict, slow: set[int],
               plots: dict[int, list[float]], width: int, lo: float, hi: float) -> list:
    ranks = [live.ranks[k] for k in members]
    owns = [rows[r.rank]["own_ms"] for r in ranks if rows.get(r.rank, {}).get("own_ms") is not None]
    states: dict[str, int] = {}
    for r in ranks:
        states[r.state] = states.get(r.state, 0) + 1
    state = ", ".join(f"{n} {s}" for s, n in sorted(states.items(), key=lambda kv: -kv[1]))
    slowest = max(ranks, key=lambda r: rows.get(r.rank, {}).get("own_ms") or 0.0)
    steps = sorted(r.steps for r in ranks)
    cpus = ((live.rank_samples.get(k) or {}).get("cpu_percent") for k in members)
    g = group_figures(owns, [rows[r.rank]["median_ms"] for r in ranks
                             if rows.get(r.rank, {}).get("median_ms") is not None],
                      [r.loss for r in ranks if r.loss is not None], [c for c in cpus if c is not None])
    own = f"{_ms(g['own_median'])} ({_ms(g['own_max'])})" if owns else DASH
    compiles = {_counts(rows.get(k, {})) for k in members}
    warn = any(r.rank in slow for r in ranks)
    return [Text(label, style="bold yellow" if warn else "bold"), state,
            f"{steps[0]}" if steps[0] == steps[-1] else f"{steps[0]}–{steps[-1]}",
            _ms(g["median"]) if g["median"] is not None else DASH,
            own, Text(spark(plots[slowest.rank], width, lo, hi), style="cyan"),
            fmt_loss(g["loss_mean"]) if g["loss_mean"] is not None else DASH,
            _compiles(ranks[0], rows.get(members[0], {})) if len(compiles) == 1
            else Text("differ", style="bold magenta"),
            f"{g['cpu_mean']:.0f}%" if g["cpu_mean"] is not None else DASH, DASH]


def _groups(live: RunLive, rows: dict) -> list[tuple[str, list[int]]]:
    """Each node's ranks (several nodes), else blocks of BLOCK ranks."""
    nodes: dict[tuple[int | None, str | None], list[int]] = {}
    for k, r in sorted(live.ranks.items()):
        nodes.setdefault((rows.get(k, {}).get("node_rank"), (r.started or {}).get("host")), []).append(k)
    if len(nodes) > 1:
        return [(f"node {key[0] if key[0] is not None else key[1]}", members)
                for key, members in nodes.items()]
    ranks = sorted(live.ranks)
    return [(f"r{chunk[0]}–{chunk[-1]}", chunk) for chunk in
            (ranks[k:k + BLOCK] for k in range(0, len(ranks), BLOCK))]


def _diverges(rank: int, stats: RunStats | None) -> bool:
    return bool(stats and rank in diverging(stats.job.compile_divergence))


def _counts(x: dict) -> tuple[int, int, int]:
    """A rank's graphs, graph breaks and recompiles, as the summary counted them."""
    return x.get("graphs") or 0, x.get("graph_breaks") or 0, x.get("recompiles") or 0


def _compiles(r: RankState, x: dict) -> Text:
    if r.state == "compiling":
        return Text(f"compiling {r.compile_id or ''}".rstrip(), style="magenta")
    graphs, breaks, recompiles = _counts(x)
    if not (graphs or recompiles or breaks):
        return Text(DASH, style="dim")
    return Text(f"{graphs}g {breaks}b {recompiles}r")


def _ms(ms: float | None) -> str:
    return fmt_ms(ms).replace(" ", "")


def _cpu(sample: dict) -> str:
    cpu = sample.get("cpu_percent")
    return DASH if cpu is None else f"{cpu:.0f}%"


def _gpu(sample: dict) -> str:
    if not sample.get("gpus"):
        return DASH
    util = sample.get("sm_util")
    mem = fmt_bytes(sample.get("gpu_mem")).replace(" ", "") if sample.get("gpu_mem") else ""
    return f"{','.join(map(str, sample['gpus']))}:{'n/a' if util is None else f'{util}%'} {mem}".rstrip()
