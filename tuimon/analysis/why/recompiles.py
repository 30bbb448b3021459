"""Recompiles: the guards that failed (shapes that change, a Python value that changes, ...),
recompiles in the steady state, and Dynamo's recompile limit, after which the code runs eager;
training's alone (a script's validation passes compile apart)."""

from __future__ import annotations

import re

from tuimon.analysis.stats.compiles import limit_hit
from tuimon.analysis.stats.point import Point, point
from tuimon.analysis.why.finding import HIGH, MEDIUM, Context, Finding

LOCATION = re.compile(r"([^\s/]+\.py):(\d+)")
HINT = re.compile(r"\(HINT: (.+?)\)\s*$", re.S)


def guard_of(reason: str) -> Point:
    """'1/0: tensor 'x' size mismatch at index 0. expected 8, actual 12' -> the guard, and where
    it is when torch says ('item_in_forward.py:21'), without the compile id."""
    first = reason.strip().splitlines()[0] if reason.strip() else ""
    first = re.sub(r"^\d+/\d+:\s*", "", first)
    parts = [p.strip() for p in first.split("  # ") if p.strip()]
    where = next((f"{m.group(1)}:{m.group(2)}" for p in parts[1:] for m in [LOCATION.search(p)] if m), None)
    return point("recompiles.guard", guard=parts[0] if parts else first, where=where)


def kind_of(reason: str) -> str:
    """What a failed guard says changed: shapes, value, object, or other."""
    low = reason.lower()
    if "size mismatch" in low or "stride mismatch" in low or ("dim" in low and "mismatch" in low):
        return "shapes"
    if "id(" in low or "obj_id" in low or "type(" in low:
        return "object"
    if "==" in low or "!=" in low:
        return "value"
    return "other"


def recompiles(ctx: Context) -> list[Finding]:
    r = ctx.row
    limit = [f for f in r.compile.compile_failures if limit_hit(f)]
    if not r.compile.recompiles and not limit:
        return []
    kinds = list(dict.fromkeys(kind_of(x) for x in r.compile.recompile_reasons)) or ["other"]
    what = point("recompiles.title", n=r.compile.recompiles, kinds=kinds, limit=bool(limit))
    evidence = [point("recompiles.count", compiles=r.compile.compiles, compile_s=r.compile.compile_s,
                      val_compiles=r.compile.val_compiles)]
    evidence += [guard_of(x) for x in r.compile.recompile_reasons[:3]]
    advice = [point(f"recompiles.{k}") for k in kinds]  # what to do about what changed
    hints = {m.group(1).strip() for x in r.compile.recompile_reasons
             for m in [HINT.search(x.splitlines()[0])] if m}
    advice += [point("torch.hint", text=h) for h in sorted(hints)[:2]]
    late = any(d.code == "recompiled" for d in r.doubts)  # recompiles in the steady state
    if late:
        evidence.append(point("recompiles.late", doubts=list(r.doubts)))
    if limit:  # that code runs eagerly from then on
        evidence += [point("recompiles.limit", failed=f["failed"], reason=f["reason"], count=f["count"])
                     for f in limit[:2]]
        advice.append(point("recompiles.raise_limit"))
    if point("recompiles.other") not in advice:
        advice.append(point("recompiles.other"))
    return [Finding("recompiles", what, evidence, advice, HIGH if limit or late else MEDIUM)]
