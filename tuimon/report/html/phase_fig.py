"""Where the step goes, eager against compiled: each phase's median (its p10–p90 as a whisker)
per variant, side by side, with compile's effect per phase in the table's words
(phase_text.speedups_text). The numbers are analysis/stats/phases.py's."""

from __future__ import annotations

from tuimon.analysis import STEP_PARTS
from tuimon.fmt import fmt_ms
from tuimon.report.html.canvas import Fig, figure, styled
from tuimon.report.html.data import Report
from tuimon.report.html.step_figs import colours
from tuimon.report.phase_text import speedups_text


@styled
def phase_bars(rep: Report) -> tuple[Fig | None, str]:
    rows = [r for r in rep.rows() if r.phases.step_phases]
    if not rows:
        return None, "no run's steps were split into phases in this session"
    parts = [p for p in STEP_PARTS if any(p in r.phases.step_phases for r in rows)]
    colour = colours(rep)
    fig = figure(1.2 + 0.5 * len(parts) * max(1, len(rows)) ** 0.5 + 0.3 * len(rows))
    ax = fig.add_subplot()
    height = 0.8 / len(rows)
    for k, r in enumerate(rows):
        ys, widths = [], []
        for j, part in enumerate(parts):
            p = r.phases.step_phases.get(part)
            if not p:
                continue
            ys.append(j + k * height)
            widths.append(p["median_ms"])
        ax.barh(ys, widths, height=height * 0.92, color=colour[r.label], label=r.label)
        for y, w in zip(ys, widths, strict=True):
            ax.annotate(fmt_ms(w), (w, y), xytext=(4, -3), textcoords="offset points", fontsize=7)
    ax.set_yticks([j + (len(rows) - 1) * height / 2 for j in range(len(parts))], parts)
    ax.invert_yaxis()
    ax.set_xlabel("median time in the step (ms)")
    ax.grid(axis="y", visible=False)
    ax.legend(loc="lower right")
    missing = sorted({p for r in rows for p in r.phases.phases_missing})
    effects = [f"{r.label}: {text}" for r in rows
               if r.compiled and (text := speedups_text(r, intervals=True))]
    caption = ("Each phase's median over the steady-state steps, per variant (the table's phase rows give "
               "their p10–p90 too). "
               + ("Compile's effect per phase (95 % CI): " + "; ".join(effects) + ". " if effects else "")
               + (f"Not seen (their time is in other): {', '.join(missing)}." if missing else ""))
    return Fig("phases", "Where the step goes: phases, eager against compiled", caption.strip(), fig), ""
