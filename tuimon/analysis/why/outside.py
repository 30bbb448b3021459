"""Much of a step outside its timed phases ("other"), named for what a profiler capture's
``outside`` table shows ran there: another module's forward, ops outside every module, or host
Python; without the table, nothing but "outside the timed phases"
(docs/why.md#what-runs-outside-the-timed-phases). syncs.py calls it."""

from __future__ import annotations

from tuimon.analysis.stats.point import Point, point
from tuimon.analysis.why.finding import INFO, MEDIUM, Context, Finding, span

SHOWN = 3  # modules, ops named in the evidence


def outside_phases(ctx: Context, frac: float, ms: float) -> list[Finding]:
    r = ctx.row
    first = point("outside.other", label=r.label, ms=ms, share=frac, eval="eval" in r.phases.step_phases)
    found = _table(ctx)
    if found is None:  # another module's forward, the loss, host work (.item(), logging) alike
        return [Finding("other", point("outside.unknown", share=frac),
                        [first, point("outside.no_capture")], [point("outside.capture")], INFO, ms)]
    table, whose = found
    mods, ops = table.get("modules") or [], table.get("ops") or []
    named = table.get("modules_named", True)
    kinds = {"modules": table.get("modules_share") or 0.0, "ops": table.get("ops_share") or 0.0,
             "host": table.get("host_share") or 0.0}
    kind = max(kinds, key=kinds.__getitem__)
    evidence = [first, point("outside.split", **whose, modules=mods[:SHOWN], ops=ops[:SHOWN],
                             shares=kinds, named=named)]
    if not named:  # a global module hook would recompile a compiled variant's graphs
        evidence.append(point("outside.unnamed"))
    if kind == "host":
        return [_host(ctx, frac, ms, evidence, ops)]
    if kind == "modules" and mods:  # not host work: a module the optimizer does not train
        top = mods[0]
        what = point("outside.module", share=frac, name=top["name"], calls=top["calls"])
        evidence.append(point("outside.not_host"))
        advice = [point("outside.compile_it", name=top["name"]), point("outside.no_grad")]
        return [Finding("other", what, evidence, advice, MEDIUM, ms)]
    what = point("outside.ops", share=frac, names=[o["name"] for o in ops[:SHOWN]], named=named)
    return [Finding("other", what, evidence, [point("outside.move_in")], MEDIUM, ms)]


def _table(ctx: Context) -> tuple[dict, dict] | None:
    """The ``outside`` table of the row's capture, else its eager baseline's (which ran the same
    code outside the trained module), with whose capture it is; one that names the other modules
    first (a compiled variant's does not: runner/profiling/outer_spans.py)."""
    found = [(cap["outside"], {"label": row.label, "steps": span(cap)})
             for cap, row in ((ctx.capture, ctx.row), (ctx.base_capture, ctx.baseline))
             if cap and cap.get("outside") is not None and row is not None]
    named = [t for t in found if t[0].get("modules_named", True)]
    chosen = named or found
    return chosen[0] if chosen else None


def _host(ctx: Context, frac: float, ms: float, evidence: list[Point], ops: list[dict]) -> Finding:
    reads = sum(o["calls"] for o in ops if o["name"] in ("aten::item", "aten::_local_scalar_dense"))
    if reads:
        evidence.append(point("outside.reads", n=reads))
    if ctx.on_gpu:  # the device waited for the host between two phases
        evidence.append(point("outside.gpu_wait"))
    advice = [point("outside.host_work"), point("outside.read_every")]
    if ctx.on_gpu:
        advice.append(point("syncs.debug_mode"))
    return Finding("syncs", point("outside.host", share=frac), evidence, advice,
                   MEDIUM if ctx.on_gpu else INFO, ms)
