"""The step-time figures: each run's step time over the session's wall time (rounds and compiles
marked), and each variant's distribution of steady step times. The lines are analysis's
StepSeries buckets, the TUI's charts' own, so a 10,000-step run is ~500 points (the caption
says how many steps a point stands for) and the y axis clips where the TUI's does."""

from __future__ import annotations

from tuimon.analysis import RunStats, axis_range, step_kind
from tuimon.fmt import fmt_ms, fmt_s
from tuimon.report.html.canvas import Fig, figure, palette, styled
from tuimon.report.html.data import Report

NCOLS = 400  # chart columns over the session's wall time (the TUI's charts: one a terminal cell)
ROUND_STYLE = ("-", "--", ":", "-.")


def colours(rep: Report) -> dict[str, str]:
    """A colour per variant label (table order; a restart's run its variant's), eager grey."""
    labels = [r.label for r in rep.summary.variants or rep.summary.runs] + [r.label for r in rep.summary.runs]
    return palette(labels, {r.label for r in rep.summary.runs if not r.compiled})


def y_range(rep: Report) -> tuple[float, float] | None:
    """The step-time axis every run's line shares: the TUI's clipping rule over all of them."""
    x0, x1 = x_range(rep)
    cols = [c for s in rep.series.values() for c in s.columns(x0, x1, NCOLS, "t")]
    return axis_range(cols)


def x_range(rep: Report) -> tuple[float, float]:
    """The wall-clock span of every run's steps: the step-time chart's x axis."""
    x1 = max((s.buckets()[-1].t1 for s in rep.series.values() if s.buckets()), default=rep.t0 + 1)
    return rep.t0, x1


def _line(ax, rep: Report, r: RunStats, colour: str, cols: list, at) -> None:
    """One process's columns as a median line and its p10–p90 band; ``at(k)`` is column k's x."""
    style = ROUND_STYLE[((r.replicate or 1) - 1) % len(ROUND_STYLE)]
    xs, mid, lo, hi = [], [], [], []
    for k, col in enumerate(cols):
        gap = col is None or col.kind == "compile"  # no step here (a pause, a turn), or a compile
        xs.append(at(k))
        mid.append(float("nan") if gap else col.p50)
        lo.append(float("nan") if gap else col.p10)
        hi.append(float("nan") if gap else col.p90)
    name = r.label + (f" · round {r.replicate}" if r.replicate else "")
    ax.fill_between(xs, lo, hi, color=colour, alpha=0.18, linewidth=0)
    ax.plot(xs, mid, color=colour, linestyle=style, linewidth=1.2, label=name)


def _compiled(ax, rep: Report, r: RunStats, colour: str, top: float | None, x) -> int:
    """Each step of a run that compiled, marked at ``x(step)`` with its time (on the axis's top
    when it lies above: ▼); how many lie above."""
    above = 0
    for s in rep.steps.get(r.run, []):
        if step_kind(s) != "compile":
            continue
        y = s["ms"] if top is None else min(s["ms"], top)
        above += 0 if y == s["ms"] else 1
        ax.plot([x(s)], [y], marker="v" if y != s["ms"] else "o", color=colour, markersize=6,
                linestyle="none")
        down = -10 - 10 * ((r.replicate or 1) - 1)  # rounds compile at the same step: one a line
        ax.annotate(f"compile {fmt_s(s['ms'] / 1000)}", (x(s), y), fontsize=7, color=colour,
                    xytext=(4, down), textcoords="offset points")
    return above


@styled
def step_time(rep: Report) -> Fig | None:
    runs = [r for r in rep.summary.runs if rep.series.get(r.run) and rep.series[r.run].buckets()]
    if not runs:
        return None
    colour, span = colours(rep), y_range(rep)
    (x0, x1), top = x_range(rep), span[1] if span else None
    width = (x1 - x0) / NCOLS
    last = max(b.i1 for r in runs for b in rep.series[r.run].buckets()) + 1
    ncols = min(NCOLS, last)  # by step: a column is a step at least
    fig = figure(5.8)
    by_t, by_i = fig.subplots(2, 1, sharey=True)
    clipped = 0
    for r in runs:
        c, series = colour[r.label], rep.series[r.run]
        _line(by_t, rep, r, c, series.columns(x0, x1, NCOLS, "t"), lambda k: x0 + (k + 0.5) * width - rep.t0)
        _line(by_i, rep, r, c, series.columns(0, last, ncols, "i"), lambda k: (k + 0.5) * last / ncols)
        clipped += _compiled(by_t, rep, r, c, top, lambda s: s["t"] - rep.t0)
        _compiled(by_i, rep, r, c, top, lambda s: s["i"])
        for e in rep.compiles.get(r.run, []):  # when it compiled: a shaded span of its length
            by_t.axvspan(e["t"] - e.get("seconds", 0.0) - rep.t0, e["t"] - rep.t0, color=c, alpha=0.08,
                         linewidth=0)
    if span:
        by_t.set_ylim(max(0.0, span[0] * 0.9), span[1] * 1.05)
    by_t.set_xlabel("wall time since the session started (s)")
    by_i.set_xlabel("step")
    by_i.xaxis.set_major_formatter("{x:,.0f}")
    for ax in (by_t, by_i):
        ax.set_ylabel("step time (ms)")
    handles, names = by_t.get_legend_handles_labels()
    fig.legend(handles, names, loc="outside lower center", ncols=4)  # below: it never hides a line
    steps = sum(len(rep.steps.get(r.run, [])) for r in runs)
    caption = (f"Each line: one process's step time, over the session's wall time (top; {NCOLS} columns "
               f"of {fmt_s(width)}) and by step (below; {ncols} columns of {last / ncols:,.3g} step(s)): a "
               f"point is the median of the steps in its column (a column of few steps takes its "
               f"neighbours' too: a rolling median), the band their p10–p90 ({steps:,} steps in all; the "
               f"TUI's charts are drawn the same way). Shaded: the time a compile ran; ● a step that "
               f"compiled, its time beside it (▼ on the axis's top when it lies above)."
               + (" Rounds (--repeats) are told apart by the line's dash." if any(r.replicate for r in runs)
                  else "")
               + (f" The y axis stops where the TUI's charts do: {clipped} compile step(s) lie above it."
                  if clipped else "")
               + " Gaps in time: the run paused, waited for its turn, or had not started.")
    return Fig("step-time", "Step time over wall time, and by step", caption, fig)


def _bins(values: list[float], lo: float, hi: float, n: int) -> tuple[list[float], list[int]]:
    """Counts of ``values`` in n equal bins over [lo, hi]; a value above hi counts in the last."""
    width = (hi - lo) / n or 1.0
    counts = [0] * n
    for v in values:
        counts[min(n - 1, max(0, int((v - lo) / width)))] += 1
    return [lo + k * width for k in range(n + 1)], counts


@styled
def distributions(rep: Report) -> Fig | None:
    rows = [(r, rep.steady(r)) for r in rep.rows()]
    rows = [(r, v) for r, v in rows if v]
    if not rows:
        return None
    colour, span = colours(rep), y_range(rep)
    lo = min(min(v) for _, v in rows)
    hi = span[1] if span else max(max(v) for _, v in rows)
    hi = max(hi, lo * 1.01 + 1e-9)
    above = sum(1 for _, v in rows for x in v if x > hi)
    fig = figure(2.2 + 0.9 * len(rows))
    axes = fig.subplots(len(rows), 1, sharex=True, squeeze=False)[:, 0]
    for ax, (r, values) in zip(axes, rows, strict=True):
        edges, counts = _bins(values, lo, hi, 80)
        ax.stairs(counts, edges, fill=True, color=colour[r.label], alpha=0.55)
        ax.axvline(r.timing.median_ms, color=colour[r.label], linewidth=1.4)
        ax.set_title(f"{r.label}: median {fmt_ms(r.timing.median_ms)} · {len(values):,} steps",
                     loc="left", fontsize=8)
        ax.set_yticks([])
        ax.grid(axis="y", visible=False)
    axes[-1].set_xlabel("step time (ms)")
    caption = ("Every steady-state step of each variant (all its processes): past the warm-up, without "
               "the steps that compiled, were profiled or held a validation pass; the line is the "
               "median the table gives (the table may keep out a few more: steps under other load).")
    if above:
        caption += (f" {above:,} step(s) above {fmt_ms(hi)} (where the step-time chart's axis stops) "
                    f"are counted in the last bin.")
    return Fig("distributions", "Step-time distributions", caption, fig)
