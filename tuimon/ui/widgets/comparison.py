"""The strip under the panels: each run (with --repeats, each variant's processes combined)
against its eager baseline, in one line each, and a line of what it did to each phase of the
step ("by phase: fwd 1.62× · bwd 1.21× · opt 1.00× · data 1.00×") once both runs split theirs.
A session that raced fixes (tuimon try, or t in the why pane) has, under the verdict, what each
fix did: summary.md's "Tried" lines (analysis/tried.py decides, report/try_text.py words)."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from tuimon.analysis import SessionSummary, columns, loss_gap_ready, not_yet, tried
from tuimon.fmt import fmt_s
from tuimon.report import sections
from tuimon.report.document import FACT, TRIED, WARNING
from tuimon.report.phase_text import speedups_text
from tuimon.report.table import breakeven_text
from tuimon.report.untold_text import untold_text
from tuimon.report.warm_text import per_start
from tuimon.ui.widgets.redraw import height, update

# A fix's line in the colour of what it did: kept (green), in doubt (yellow), a loss (red).
TRIED_STYLE = {tried.HELPED: "bold green", tried.START: "green", tried.CANNOT_TELL: "yellow",
               tried.WORSE: "red", tried.FAILED: "red", tried.NOT_APPLIED: "yellow",
               tried.PENDING: "dim"}


class ComparisonStrip(Static):
    """Its height only grows while the same runs are compared at the same width: a line that
    wraps or not as the numbers move (or a verdict that changes its mind) would otherwise move
    every panel by a row and lay the whole screen out again."""

    _rows = 0
    _runs: tuple = ()

    def show(self, summary: SessionSummary, gpu_note: str | None) -> None:
        t = self._text(summary, gpu_note)
        width = max(1, self.content_size.width)
        runs = (width, *(r.label for r in summary.runs))
        if runs != self._runs:
            self._runs, self._rows = runs, 0
        rows = height(t, width)
        self._rows = max(self._rows, rows)
        t.append("\n" * (self._rows - rows))
        update(self, t)  # laid out again only when its height changes

    def _text(self, summary: SessionSummary, gpu_note: str | None) -> Text:
        t = Text()
        doc = sections.document({}, summary, only=("verdict", "tried", "caution", "loop"))
        for x in doc["verdict"].lines:  # the answer first, as report/verdict_text.py words it
            t.append(x.text + "\n", style={"use": "bold green", "unreliable": "bold yellow"}.get(
                x.figures["kind"], "bold"))
        for x in doc["tried"].of(TRIED):  # then what each fix did, as summary.md's Tried says
            t.append("tried ", style="dim")
            t.append(x.text + "\n", style=TRIED_STYLE.get(x.figures["code"], ""))
        rows = {r.label: r for r in columns(summary)}
        compared = [r for r in rows.values() if r.compare.baseline and r.compare.baseline != r.label
                    and r.compare.speedup]
        if not compared:
            t.append("comparison: waiting for an eager run and a variant to reach steady state",
                     style="dim")
        for i, r in enumerate(compared):
            base, speedup = r.compare.baseline, r.compare.speedup
            if base is None or speedup is None:  # none: compared holds the rows with both
                continue
            if i:
                t.append("\n")
            t.append(f"{r.label}", style="bold")
            t.append(f" vs {base}: ", style="dim")
            if waiting := not_yet(r, rows.get(base)):  # a speedup of a few steps means nothing
                t.append("not yet: {} of {} steady steps".format(*waiting), style="dim")
                continue
            style = "bold" if r.compare.within_noise else ("bold green" if speedup >= 1
                                                           else "bold red")
            if r.compare.untold is not None:  # no figure: its interval holds every answer
                t.append(untold_text(r.compare.untold), style=style)
            else:
                t.append(f"{r.compare.speedup:.2f}×", style=style)
            if r.compare.speedup_lo is not None and r.compare.untold is None:
                over = f", {len(r.processes)} processes" if r.processes else ""
                t.append(f" (CI {r.compare.speedup_lo:.2f}–{r.compare.speedup_hi:.2f}{over}"
                         f"{', within noise' if r.compare.within_noise else ''})", style="dim")
            if r.load.load_differs:
                t.append(" unreliable: other processes' load differed", style="bold yellow")
            elif r.load.faults_differ:
                t.append(" unreliable: page faults differed", style="bold yellow")
            elif r.doubts:
                t.append(" unreliable: recompiles", style="bold yellow")
            if r.compiled and len(r.warm.starts) > 1:  # cold and warm side by side (warm_text.py)
                t.append(f" · compile {per_start(lambda x: fmt_s(x.compile.compile_s))(r)} · pays off "
                         f"{per_start(_pays)(r)}")
            elif r.compiled:
                t.append(f" · compile {fmt_s(r.compile.compile_s)} · pays off {breakeven_text(r)}")
            if r.loss.loss_comparable is False:
                t.append(" · losses not comparable (first losses differ)", style="dim")
            elif loss_gap_ready(r):
                t.append(f" · loss Δ ≤ {r.loss.max_loss_diff:.2g} over {r.loss.common_steps} steps",
                         style="dim")
            if by_part := speedups_text(r):  # what it did to each phase of the step
                t.append("\n  by phase: ", style="dim")
                t.append(by_part)
        loop = [x.text for x in doc["loop"].of(FACT) if x.figures.get("part") in ("step", "loss")]
        if loop:  # how the script's loop was read, in brief (the why pane, w, has all of it)
            t.append("\n" + " · ".join(loop), style="dim")
        for x in doc["loop"].of(WARNING):  # the script's own numbers disagree with tuimon's
            t.append(f"\n{x.label}: {x.text}", style="yellow")
        for x in doc["caution"].lines:  # the machine was busy
            t.append(f"\n{x.text}", style="yellow")
        if gpu_note:
            t.append(f"\n{gpu_note}", style="dim")
        return t


def _pays(r) -> str:
    """When a start's compile has paid off, as wall time."""
    if r.compare.breakeven_never:
        return "never"
    if r.compare.untold is not None:  # the break-even of a speedup too wide to tell
        return "cannot tell"
    return fmt_s(r.compare.breakeven_s) if r.compare.breakeven_s is not None else "–"
