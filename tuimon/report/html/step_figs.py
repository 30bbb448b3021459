"""The step-time figures: each run's step time over the session's wall time (its rounds and its
compiles marked), and each variant's distribution of steady-state step times (every step).

The lines are analysis's StepSeries buckets (the TUI's charts' own: a bucket's median, its p10–p90
band), so a 10,000-step run is drawn from ~500 points per run, and the caption says how many
steps a point stands for; the y axis clips where the TUI's does (analysis's ``axis_range``)."""

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


@styled
def step_time(rep: Report) -> Fig | None:
    runs = [r for r in rep.summary.runs if rep.series.get(r.run) and rep.series[r.run].buckets()]
    if not runs:
        return None
    colour, span = colours(rep), y_range(rep)
    (x0, x1), top = x_range(rep), span[1] if span else None
    width = (x1 - x0) / NCOLS
    fig = figure(3.8)
    ax = fig.add_subplot()
    clipped = 0
    for r in runs:
        c = colour[r.label]
        style = ROUND_STYLE[((r.replicate or 1) - 1) % len(ROUND_STYLE)]
        xs, mid, lo, hi = [], [], [], []
        for k, col in enumerate(rep.series[r.run].columns(x0, x1, NCOLS, "t")):
            gap = col is None or col.kind == "compile"  # no step here (a pause, a turn), or a compile
            xs.append(x0 + (k + 0.5) * width - rep.t0)
            mid.append(float("nan") if gap else col.p50)
            lo.append(float("nan") if gap else col.p10)
            hi.append(float("nan") if gap else col.p90)
        name = r.label + (f" · round {r.replicate}" if r.replicate else "")
        ax.fill_between(xs, lo, hi, color=c, alpha=0.18, linewidth=0)
        ax.plot(xs, mid, color=c, linestyle=style, linewidth=1.2, label=name)
        for s in rep.steps.get(r.run, []):  # each step that compiled, at its time
            if step_kind(s) != "compile":
                continue
            y = s["ms"] if top is None else min(s["ms"], top)
            clipped += 0 if y == s["ms"] else 1
            ax.plot([s["t"] - rep.t0], [y], marker="v" if y != s["ms"] else "o", color=c, markersize=6,
                    linestyle="none")
            ax.annotate(f"compile {fmt_s(s['ms'] / 1000)}", (s["t"] - rep.t0, y), fontsize=7, color=c,
                        xytext=(4, -10), textcoords="offset points")
        for e in rep.compiles.get(r.run, []):  # when it compiled: a shaded span of its length
            ax.axvspan(e["t"] - e.get("seconds", 0.0) - rep.t0, e["t"] - rep.t0, color=c, alpha=0.08,
                       linewidth=0)
    if span:
        ax.set_ylim(max(0.0, span[0] * 0.9), span[1] * 1.05)
    ax.set_xlabel("wall time since the session started (s)")
    ax.set_ylabel("step time (ms)")
    fig.legend(loc="outside lower center", ncols=4)  # below the axes: it never hides a line
    steps = sum(len(rep.steps.get(r.run, [])) for r in runs)
    caption = (f"Each line: one process's step time over the session, in {NCOLS} columns of "
               f"{fmt_s(width)} each: a point is the median of the steps in its column (a column of "
               f"few steps takes its neighbours' too: a rolling median), the band their p10–p90 ({steps:,} "
               f"steps in all; the TUI's charts are drawn the same way). Shaded: the time a compile ran; "
               f"● a step that compiled, its time beside it (▼ on the axis's top when it lies above)."
               + (" Rounds (--repeats) are told apart by the line's dash." if any(r.replicate for r in runs)
                  else "")
               + (f" The y axis stops where the TUI's charts do: {clipped} compile step(s) lie above it."
                  if clipped else "")
               + " Gaps: the run paused, waited for its turn, or had not started.")
    return Fig("step-time", "Step time over wall time", caption, fig)


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


def row_steps(rep: Report, r: RunStats) -> int:
    return sum(len(rep.steps.get(run, [])) for run in rep.processes(r))
