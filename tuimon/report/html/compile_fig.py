"""The compiles, one bar each in the order they ran: where its time went (Dynamo's trace,
AOTAutograd, Inductor, its code generation; the rest of its time as "other"), which graph it made
(forward or backward, its frame), when in the session it ran, and whether it was a recompile (and
torch's reason) or a validation pass's. From the compile events the runner recorded
(runner/compile_trace.py); nothing is recomputed."""

from __future__ import annotations

from tuimon.fmt import fmt_s, short_name
from tuimon.report.html.canvas import Fig, figure, styled
from tuimon.report.html.data import Report

ROWS = 40  # compiles drawn at most (the caption says how many more there were)
PHASES = (("dynamo", "Dynamo trace", "#0072B2"), ("aot", "AOTAutograd", "#009E73"),
          ("inductor", "Inductor", "#E69F00"), ("codegen", "codegen / compile", "#D55E00"))
OTHER = "#BBBBBB"


def _label(run_label: str, e: dict, at: float) -> str:
    # a forward graph by its frame (forward, training_step, ...), a backward one as such
    graph = short_name(e.get("frame") or "forward", 18) if e.get("forward", True) else "backward"
    what = f"{run_label} · {e.get('compile_id', '?')} {graph}"
    tags = [f"at {fmt_s(at)}"]
    if e.get("recompile_reason"):
        tags.append("recompile")
    if e.get("validation"):
        tags.append("validation")
    if e.get("failed"):
        tags.append("failed")
    return f"{what} ({', '.join(tags)})"


@styled
def compile_timeline(rep: Report) -> tuple[Fig | None, str]:
    labels = {r.run: r.label + (f" #{r.replicate}" if r.replicate else "") for r in rep.summary.runs}
    found = sorted(((e, labels.get(run, run)) for run, evs in rep.compiles.items() for e in evs),
                   key=lambda x: x[0]["t"] - x[0].get("seconds", 0.0))
    if not found:
        return None, "no compile was recorded in this session (only eager runs, or nothing compiled)"
    shown = found[:ROWS]
    fig = figure(1.4 + 0.24 * len(shown))
    ax = fig.add_subplot()
    ys, names, reasons = list(range(len(shown))), [], []
    for y, (e, label) in zip(ys, shown, strict=True):
        left, phases = 0.0, e.get("phases") or {}
        for key, _, colour in PHASES:
            width = phases.get(key) or 0.0
            ax.barh(y, width, left=left, color=colour, height=0.7)
            left += width
        rest = max(0.0, (e.get("seconds") or 0.0) - left)
        ax.barh(y, rest, left=left, color=OTHER, height=0.7)
        ax.annotate(fmt_s(e.get("seconds")), (left + rest, y), xytext=(4, -3), textcoords="offset points",
                    fontsize=7)
        names.append(_label(label, e, e["t"] - (e.get("seconds") or 0.0) - rep.t0))
        if e.get("recompile_reason"):
            reasons.append(f"{e.get('compile_id', '?')} in {label}: {e['recompile_reason'].strip()}")
    ax.set_yticks(ys, names, fontsize=7)
    for tick, (e, _) in zip(ax.get_yticklabels(), shown, strict=True):
        if e.get("recompile_reason"):
            tick.set_color("#B00000")
    ax.invert_yaxis()
    ax.grid(axis="y", visible=False)
    ax.set_xlabel("seconds of the compile")
    for _, name, colour in PHASES:  # the legend's entries (empty bars)
        ax.barh([0], [0], color=colour, label=name)
    ax.barh([0], [0], color=OTHER, label="other (guards, cache, ...)")
    fig.legend(loc="outside lower center", ncols=5)  # below the axes: it never hides a bar
    more = len(found) - len(shown)
    caption = (f"{len(found)} compile(s), each a bar in the order they started: its time in Dynamo's trace, "
               "AOTAutograd, Inductor and its code generation (as torch reports them), the rest as other; "
               "'at' is when it began in the session. Recompiles are in red.")
    if more:
        caption += f" The first {len(shown)} are drawn; {more} more are in events.jsonl's compile events."
    if reasons:
        etc = "; ..." if len(reasons) > 8 else ""
        caption += " Recompiled because: " + "; ".join(reasons[:8]) + etc + "."
    return Fig("compiles", "Compile timeline: each graph's compile, by phase", caption, fig), ""
