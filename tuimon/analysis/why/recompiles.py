"""Recompiles: the guards that failed (shapes that change, a Python value that changes, ...),
recompiles in the steady state, and Dynamo's recompile limit, after which the code runs eager;
training's alone (a script's validation passes compile apart)."""

from __future__ import annotations

import re

from tuimon.analysis.why.finding import HIGH, MEDIUM, Context, Finding
from tuimon.fmt import fmt_s

LOCATION = re.compile(r"([^\s/]+\.py):(\d+)")
HINT = re.compile(r"\(HINT: (.+?)\)\s*$", re.S)


def guard_text(reason: str) -> str:
    """'1/0: tensor 'x' size mismatch at index 0. expected 8, actual 12' -> the guard, where it
    is when torch says ('item_in_forward.py:21'), without the compile id."""
    first = reason.strip().splitlines()[0] if reason.strip() else ""
    first = re.sub(r"^\d+/\d+:\s*", "", first)
    parts = [p.strip() for p in first.split("  # ") if p.strip()]
    where = next((f"{m.group(1)}:{m.group(2)}" for p in parts[1:] for m in [LOCATION.search(p)] if m), None)
    guard = parts[0] if parts else first
    return f"{guard[:160]}" + (f" ({where})" if where else "")


def kind_of(reason: str) -> str:
    low = reason.lower()
    if "size mismatch" in low or "stride mismatch" in low or ("dim" in low and "mismatch" in low):
        return "shapes"
    if "id(" in low or "obj_id" in low or "type(" in low:
        return "object"
    if "==" in low or "!=" in low:
        return "value"
    return "other"


ADVICE = {
    "shapes": "input shapes change between steps (a short last batch, variable lengths): pad or bucket "
              "them, DataLoader(drop_last=True), or mark the dimension dynamic from the start "
              "(torch._dynamo.mark_dynamic(x, 0), or torch.compile(dynamic=True)) so one graph serves all",
    "value": "a Python number the forward reads changes between steps: keep it in a tensor (or, for "
             "a module's int attribute, torch._dynamo.config.allow_unspec_int_on_nn_module = True)",
    "object": "a different object (a new module, optimizer or closure) reaches the compiled code each "
              "step: build it once and reuse it",
    "other": "TORCH_LOGS=recompiles prints every guard that failed, with its line",
}


def recompiles(ctx: Context) -> list[Finding]:
    r = ctx.row
    limit = [f for f in r.compile_failures if "recompile limit" in f["reason"].lower()
             or "cache_size_limit" in f["reason"].lower()]
    if not r.recompiles and not limit:
        return []
    kinds = list(dict.fromkeys(kind_of(x) for x in r.recompile_reasons)) or ["other"]
    words = {"shapes": "input shapes changed", "value": "a Python value changed",
             "object": "another object reached the compiled code", "other": "guards failed"}
    title = (f"{r.recompiles} recompile{'s' if r.recompiles != 1 else ''}: "
             + ", ".join(words[k] for k in kinds))
    evidence = [f"{r.compiles} compiles in all, {fmt_s(r.compile_s)} compiling"]
    if r.val_compiles:
        evidence[0] += f" (and {r.val_compiles} in validation passes, apart)"
    evidence += [f"guard failed: {guard_text(x)}" for x in r.recompile_reasons[:3]]
    advice = [ADVICE[k] for k in kinds]
    hints = {m.group(1).strip() for x in r.recompile_reasons for m in [HINT.search(x.splitlines()[0])] if m}
    advice += [f"torch's hint: {h}" for h in sorted(hints)[:2]]
    late = r.unreliable if r.unreliable and "recompiled after warm-up" in r.unreliable else None
    if late:
        evidence.append(f"in the steady state: {late}")
    if limit:
        title += "; the recompile limit was hit: that code runs eagerly from then on"
        evidence += [f"{f['failed']}: {f['reason']} (×{f['count']})" for f in limit[:2]]
        advice.append("raise torch._dynamo.config.recompile_limit only when the variants are few and "
                      "legitimate; better, remove what changes")
    if ADVICE["other"] not in advice:
        advice.append(ADVICE["other"])
    return [Finding("recompiles", title, evidence, advice, HIGH if limit or late else MEDIUM)]
