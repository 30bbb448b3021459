"""Host syncs in the step: scalar reads (``.item()``) and device syncs the profiler's sync
detector found in the model's forward and backward (runner/profiling/analysis.py), named by
module where the eager capture had module spans; and, from the step's phases, much of the step
in "other", named for what the capture shows ran there (outside.py: another module's forward, ops
outside any module, or host work: scalar reads, logging between backward and the next forward)."""

from __future__ import annotations

from tuimon.analysis.stats.point import point
from tuimon.analysis.why.finding import HIGH, INFO, MEDIUM, Context, Finding, span
from tuimon.analysis.why.outside import outside_phases

OTHER_SHARE = 0.2  # this much of a step outside its phases: worth naming what ran there


def in_model(s: dict) -> bool:
    """A sync the user's code makes: a real device sync anywhere, or a scalar read in forward or
    backward. Not tuimon's own loss read, nor an optimizer's read of its CPU step counter."""
    if s.get("ours"):
        return False
    if s.get("kind") in ("device_sync", "blocking_copy"):
        return True
    return s.get("phase") in ("forward", "backward") or bool(s.get("module"))


def between_phases(ctx: Context) -> tuple[float, float] | None:
    """(share, mean ms) of the step outside data, forward, backward, optimizer and eval
    ("other"), when the run saw the four parts every step has."""
    r = ctx.row
    other = r.phases.step_phases.get("other")
    if not other or r.phases.phases_missing or other.get("share") is None:
        return None
    return other["share"], other["mean_ms"]


def host_syncs(ctx: Context) -> list[Finding]:
    found = []
    base = ctx.baseline.label if ctx.baseline else ""
    for cap, who in ((ctx.base_capture, base), (ctx.capture, ctx.row.label)):
        if cap:  # each with whose capture found it
            found += [(s, {"label": who, "steps": span(cap)}) for s in cap.get("syncs") or [] if in_model(s)]
    between = between_phases(ctx)
    if not found:
        return _between(ctx, between)
    first = found[0][0]
    named = next((s for s, _ in found if s.get("module")), first)
    mine = [s for s in (ctx.capture or {}).get("syncs") or [] if in_model(s)]
    count = sum(s["count"] for s in mine)
    device = any(s.get("kind") != "scalar_read" for s, _ in found)
    what = point("syncs.model", device=device, op=named["op"], where=named.get("where"), count=count,
                 label=ctx.row.label)
    evidence = [point("syncs.sync", op=s["op"], count=s["count"], where=s.get("where"),
                      context=s.get("context"), kind=s["kind"], **who) for s, who in found[:5]]
    if not ctx.on_gpu:  # a scalar read costs little here, much on a GPU
        evidence.append(point("syncs.cpu"))
    if between is not None and between[0] >= OTHER_SHARE / 2:
        evidence.append(point("syncs.between", share=between[0], ms=between[1], label=ctx.row.label))
    breaks = [b for b in ctx.row.compile.graph_breaks if any(w in b["reason"].lower()
                                                             for w in ("item", "scalar"))]
    if breaks:
        evidence.append(point("syncs.breaks", where=breaks[0]["where"]))
    advice = [point("syncs.keep_on_device"), point("syncs.capture_scalar")]
    if ctx.on_gpu or device:
        advice.append(point("syncs.debug_mode"))
    in_step = named.get("phase") in ("forward", "backward")
    severity = HIGH if ctx.on_gpu and device else MEDIUM if in_step else INFO
    cost = (sum(s.get("ms") or 0.0 for s in mine) or None) if ctx.row_timed else None
    return [Finding("syncs", what, evidence, advice, severity, cost)]


def _between(ctx: Context, between: tuple[float, float] | None) -> list[Finding]:
    """No sync in a capture, but much of the step outside its phases: named for what the capture
    shows ran there (outside.py), host work only where it shows host work."""
    if between is None or between[0] < OTHER_SHARE:
        return []
    return outside_phases(ctx, *between)
