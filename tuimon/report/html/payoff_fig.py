"""Is compile worth it, as a picture: each variant's training time against steps, cold and warm.
Each line is the model the break-even is computed from (analysis/stats/compare.py ``pays_off``),
so the lines cross at the break-even analysis gives, marked in the table's words; each process's
measured running total is drawn faintly over it, so the model can be checked by eye."""

from __future__ import annotations

import math

from tuimon.analysis import RunStats
from tuimon.report.html.canvas import Fig, figure, styled
from tuimon.report.html.data import Report
from tuimon.report.html.step_figs import colours
from tuimon.report.table import breakeven_text
from tuimon.report.warm_text import as_start

POINTS = 400  # measured running totals drawn with at most this many points a process
START_STYLE = {"cold": "-", "warm": "--", "persistent": "-."}


def _line(r: RunStats) -> tuple[float, float]:
    """(overhead s, s a step): the model line of a row (or of one start's copy of it)."""
    median = r.timing.median_ms
    assert median is not None  # payoff() draws rows with a steady step time only
    return r.timing.overhead_s or 0.0, median / 1000.0


def starts(r: RunStats) -> list[tuple[str | None, RunStats]]:
    """A compiled row under each start it ran (cold, warm), else itself."""
    if len(r.warm.starts) > 1 or (r.warm.starts and r.compiled):
        return [(start, as_start(r, start)) for start in r.warm.starts]
    return [(r.warm.start, r)]


def _measured(rep: Report, run: str) -> tuple[list[int], list[float]]:
    """A process's steps' running total (s) against their count, thinned to POINTS points (a
    running total is monotone: dropping points between kept ones hides nothing)."""
    # a script's steps that held a validation pass are not training's (the break-even leaves them out)
    steps = sorted((s for s in rep.steps.get(run, []) if not s.get("gap")), key=lambda s: s["i"])
    every = max(1, math.ceil(len(steps) / POINTS))
    xs, ys, total = [], [], 0.0
    for k, s in enumerate(steps):
        total += s["ms"] / 1000.0
        if k % every == 0 or k == len(steps) - 1:
            xs.append(k + 1)
            ys.append(total)
    return xs, ys


@styled
def payoff(rep: Report) -> tuple[Fig | None, str]:
    """(the figure, '') or (None, why there is none)."""
    rows = rep.rows()
    compiled = [r for r in rows if r.compiled and r.compare.baseline and r.timing.median_ms]
    if not compiled:
        return None, ("no compiled variant with a steady step time and an eager baseline to weigh it "
                      "against in this session")
    by_label = {r.label: r for r in rows}
    bases = [by_label[label] for label in dict.fromkeys(r.compare.baseline for r in compiled)
             if label in by_label]
    ends = [r.timing.steps for r in rows]
    for r in compiled:
        for _, s in starts(r):
            ends += [s.compare.breakeven_steps * 2 if s.compare.breakeven_steps else 0,
                     s.compare.breakeven_hi or 0]
    if rep.summary.horizon and rep.summary.horizon.get("steps"):
        ends.append(rep.summary.horizon["steps"])
    n_max = max(max(ends), 10)
    colour = colours(rep)
    fig = figure(4.6)
    ax = fig.add_subplot()
    for r in bases + compiled:
        for start, s in starts(r) if r.compiled else [(None, r)]:
            a, b = _line(s)
            name = r.label + (f" · {start}" if start and r.compiled else "")
            ax.plot([0, n_max], [a, a + b * n_max], color=colour[r.label],
                    linestyle=START_STYLE.get(start or "", "-"), linewidth=1.6, label=name)
        for run in rep.processes(r)[:1]:  # its first process (round 1's)
            xs, ys = _measured(rep, run)
            ax.plot(xs, ys, color=colour[r.label], linewidth=3.5, alpha=0.25, solid_capstyle="butt",
                    label=f"{r.label}: measured")
    notes = []
    for r in compiled:
        base = by_label.get(r.compare.baseline or "")
        if base is None:
            continue
        for start, s in starts(r):
            where = f"{r.label}" + (f" ({start})" if start else "")
            notes.append(f"{where}, compile pays off after: {breakeven_text(s)}")
            n = s.compare.breakeven_steps
            if s.compare.breakeven_never or not n:
                continue
            a, b = _line(base)
            y = a + b * n
            ax.plot([n], [y], marker="o", markersize=7, color=colour[r.label], markeredgecolor="black")
            ax.axvline(n, color=colour[r.label], linewidth=0.8, linestyle=":")
            ax.annotate(f"break-even{' ' + start if start else ''}: step {n:,}", (n, y),
                        xytext=(6, -14), textcoords="offset points", fontsize=8)
            if s.compare.breakeven_lo is not None:
                ax.axvspan(s.compare.breakeven_lo, s.compare.breakeven_hi or n_max,
                           color=colour[r.label], alpha=0.07, linewidth=0)
    if rep.summary.horizon and rep.summary.horizon.get("steps"):
        ax.axvline(rep.summary.horizon["steps"], color="black", linewidth=0.8, linestyle="-.")
        notes.append(f"the dash-dotted line: the horizon the verdict weighs "
                     f"({rep.summary.horizon['steps']:,} steps)")
    ax.set_xlim(0, n_max)
    ax.xaxis.set_major_formatter("{x:,.0f}")
    ax.set_ylim(bottom=0)
    ax.set_xlabel("training steps")
    ax.set_ylabel("time spent training (s)")
    fig.legend(loc="outside lower center", ncols=3)  # below the axes: it never hides a line
    caption = ("Each straight line: a variant's warm-up overhead (compile, warm-up steps) and then its "
               "median step, step after step, as the break-even is computed; dashed: a warm start "
               "(its cache seeded from an earlier run's artifacts). Where a compiled variant's line "
               "crosses its eager baseline's, compile has paid for itself (●; the shaded span: the "
               "range the speedup's 95 % interval allows). The thick faint lines: what each variant's "
               "first process measured, its steps' running total over the steps it ran (a script's steps "
               "that held a validation pass left out; at most "
               f"{POINTS} points); it climbs faster than the straight line where steps vary a lot (the "
               "line takes the median step, the total every step). Start-up before the first step is "
               "in neither. "
               + "; ".join(notes) + ".")
    return Fig("payoff", "Is compile worth it: cumulative training time, cold and warm", caption, fig), ""
