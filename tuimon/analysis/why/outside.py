"""Much of a step outside its timed phases ("other"), named for what a profiler capture shows
ran there (syncs.py calls it with other's share and mean).

A script's forward is the trained module's calls only (runner/script/phases.py): another
module's forward (a frozen loss network run twice a step, a teacher, ``nn.MSELoss``), a loss
computed from tensors (Gram matrices) and the loop's own Python all land in "other". The
capture's ``outside`` table (runner/profiling/outside.py) tells them apart: outermost module
calls other than the trained one, ops called outside every module, and time in which no op ran
(Python on the host). The finding names the largest of the three; host work only when the
capture shows it, and without a capture (or a table: an older session, a recipe's loop) nothing
but "outside the timed phases".
"""

from __future__ import annotations

from tuimon.analysis.why.finding import INFO, MEDIUM, Context, Finding, span
from tuimon.fmt import fmt_ms

SHOWN = 3  # modules, ops named in the evidence


def outside_phases(ctx: Context, frac: float, ms: float) -> list[Finding]:
    r = ctx.row
    first = (f"{r.label}: {fmt_ms(ms)} a step ({frac:.0%}) outside data, forward, backward, "
             "optimizer" + (", eval" if "eval" in r.step_phases else "") + " (other)")
    found = _table(ctx)
    if found is None:
        return [Finding("other", f"{frac:.0%} of the step is outside its timed phases",
                        [first, "no profiler capture of this run says what ran there: another "
                         "module's forward, the loss, host work (.item(), logging) alike"],
                        ["a capture names it: --profile-at N (or p in the TUI) records the "
                         "modules and ops outside the trained module"], INFO, ms)]
    table, whose = found
    mods, ops = table.get("modules") or [], table.get("ops") or []
    named = table.get("modules_named", True)
    kinds = {"modules": table.get("modules_share") or 0.0, "ops": table.get("ops_share") or 0.0,
             "host": table.get("host_share") or 0.0}
    kind = max(kinds, key=kinds.get)
    evidence = [first, f"in {whose}: " + _split(mods, ops, kinds, named)]
    if not named:
        evidence.append("a compiled variant's capture does not name other modules (a global module "
                        "hook would recompile its graphs): their ops count among the ops")
    if kind == "host":
        return [_host(ctx, frac, ms, evidence, ops)]
    if kind == "modules" and mods:
        top = mods[0]
        title = (f"other: {frac:.0%} of the step, mostly {top['name']}'s forward outside the trained "
                 f"module ({top['calls']:g} call{'s' if top['calls'] != 1 else ''} a step)")
        evidence.append("not host work: a module the optimizer does not train (a frozen loss network, "
                        "a teacher, a metric) runs outside the forward tuimon times, the trained "
                        "module's calls")
        advice = [f"compile it too: torch.compile the {top['name']} in the script (tuimon's compiled "
                  "variants compile the trained module only), or race compiling it instead of the "
                  f"trained one: --compile-module {top['name']}",
                  "what needs no gradient under torch.no_grad() (or inference_mode), and frozen "
                  "parameters with requires_grad=False: autograd then keeps nothing for them"]
        return [Finding("other", title, evidence, advice, MEDIUM, ms)]
    names = ", ".join(o["name"] for o in ops[:SHOWN]) or "ops"
    where = "outside any module" if named else "outside the trained module"
    title = f"other: {frac:.0%} of the step, mostly tensor ops {where} ({names})"
    advice = ["it is the step's own tensor work (a loss, Gram matrices, normalization) outside the "
              "compiled module: move it into the module's forward, or torch.compile the function "
              "that computes it"]
    return [Finding("other", title, evidence, advice, MEDIUM, ms)]


def _table(ctx: Context) -> tuple[dict, str] | None:
    """The ``outside`` table of the row's capture, else its eager baseline's (which ran the same
    code outside the trained module), with whose it is; one that names the other modules first
    (a compiled variant's does not: runner/profiling/outer_spans.py)."""
    found = [(cap["outside"], f"{row.label}'s {span(cap)}")
             for cap, row in ((ctx.capture, ctx.row), (ctx.base_capture, ctx.baseline))
             if cap and cap.get("outside") is not None and row is not None]
    named = [t for t in found if t[0].get("modules_named", True)]
    return (named or found or [None])[0]


def _split(mods: list[dict], ops: list[dict], kinds: dict, named: bool = True) -> str:
    """'Vgg16's forward ×2 a step 31 % of the step (aten::conv2d, aten::relu), MSELoss ×5 2 %;
    ops outside any module 4 % (aten::bmm ×4, aten::div ×6); no op running (Python) 8 %'"""
    parts = []
    if mods:
        named = ", ".join(f"{m['name']}'s forward ×{m['calls']:g} a step {m['share']:.0%}"
                          + (f" ({', '.join(m['ops'][:2])})" if m.get("ops") else "") for m in mods[:SHOWN])
        parts.append(named + " of the captured step")
    if ops:
        where = "outside any module" if named else "outside the trained module"
        parts.append(f"ops {where} {kinds['ops']:.0%} ("
                     + ", ".join(f"{o['name']} ×{o['calls']:g}" for o in ops[:SHOWN]) + ")")
    parts.append(f"no op running (Python on the host) {kinds['host']:.0%}")
    return "; ".join(parts)


def _host(ctx: Context, frac: float, ms: float, evidence: list[str], ops: list[dict]) -> Finding:
    reads = sum(o["calls"] for o in ops if o["name"] in ("aten::item", "aten::_local_scalar_dense"))
    if reads:
        evidence.append(f"{reads:g} scalar read(s) a step outside the timed phases (.item(), float())")
    if ctx.on_gpu:
        evidence.append("on the GPU's timeline: time the device waited for the host between two "
                        "phases, as after a scalar read (.item(), a tensor printed or compared)")
    advice = ["look for per-step host work between backward and the next forward: .item() or "
              "float(loss) every step, logging, metrics on the host, a checkpoint",
              "keep values on the device and read them every N steps"]
    if ctx.on_gpu:
        advice.append("torch.cuda.set_sync_debug_mode('warn') names every line that syncs")
    return Finding("syncs", f"host work between phases: {frac:.0%} of the step is outside them",
                   evidence, advice, MEDIUM if ctx.on_gpu else INFO, ms)
