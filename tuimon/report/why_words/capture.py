"""The words of what a profiler capture shows (analysis/why: syncs, outside, ops): host syncs in
the model, what ran outside the timed phases, the top-op diff of the eager and compiled captures.
One entry a code, a function of its figures."""

from __future__ import annotations

from tuimon.fmt import fmt_ms, short_name
from tuimon.report.why_words.compiled import fixed, span_text

KINDS = {"scalar_read": "scalar read", "device_sync": "device sync", "blocking_copy": "blocking copy"}
SHOWN = 4  # ops named a line of the top-op diff; the rest are counted


def _sync(f: dict) -> str:
    where = f["where"] or "?"
    context = f" in {short_name(f['context'])}" if f["context"] else ""
    return (f"{f['op']} ×{f['count']:g}/step at {where}{context} ({KINDS.get(f['kind'], f['kind'])}; "
            f"{f['label']}'s {span_text(f['steps'])})")


def _model(f: dict) -> str:
    text = f"{'host syncs' if f['device'] else 'scalar reads'} in the model: {f['op']} at {f['where']}"
    return text + (f", {f['count']:g} a step in {f['label']}" if f["count"] else "")


def _where(named: bool) -> str:
    return "outside any module" if named else "outside the trained module"


def _outside_split(f: dict) -> str:
    """'Vgg16's forward ×2 a step 31 % of the step (aten::conv2d, aten::relu), MSELoss ×5 2 %;
    ops outside any module 4 % (aten::bmm ×4, aten::div ×6); no op running (Python) 8 %'"""
    parts = []
    if f["modules"]:
        parts.append(", ".join(f"{m['name']}'s forward ×{m['calls']:g} a step {m['share']:.0%}"
                               + (f" ({', '.join(m['ops'][:2])})" if m.get("ops") else "")
                               for m in f["modules"]) + " of the captured step")
    if f["ops"]:
        parts.append(f"ops {_where(f['named'])} {f['shares']['ops']:.0%} ("
                     + ", ".join(f"{o['name']} ×{o['calls']:g}" for o in f["ops"]) + ")")
    parts.append(f"no op running (Python on the host) {f['shares']['host']:.0%}")
    return f"in {f['label']}'s {span_text(f['steps'])}: " + "; ".join(parts)


def _module(f: dict) -> str:
    calls = f["calls"]
    return (f"other: {f['share']:.0%} of the step, mostly {f['name']}'s forward outside the trained module "
            f"({calls:g} call{'s' if calls != 1 else ''} a step)")


DEBUG_MODE = "torch.cuda.set_sync_debug_mode('warn') names every line that syncs"

SYNCS = {
    "syncs.model": _model,
    "syncs.sync": _sync,
    "syncs.between": lambda f: (f"{f['share']:.0%} of {f['label']}'s step falls between its phases (other: "
                                f"{fmt_ms(f['ms'])}), where a scalar read makes the host wait"),
    "syncs.breaks": lambda f: f"under torch.compile it also breaks the graph: {f['where']}",
    "syncs.debug_mode": lambda f: DEBUG_MODE,
}

OUTSIDE = {
    "outside.other": lambda f: (f"{f['label']}: {fmt_ms(f['ms'])} a step ({f['share']:.0%}) outside data, "
                                "forward, backward, optimizer" + (", eval" if f["eval"] else "")
                                + " (other)"),
    "outside.unknown": lambda f: f"{f['share']:.0%} of the step is outside its timed phases",
    "outside.split": _outside_split,
    "outside.module": _module,
    "outside.compile_it": lambda f: (f"compile it too: torch.compile the {f['name']} in the script (tuimon's "
                                     "compiled variants compile the trained module only), or race compiling "
                                     f"it instead of the trained one: --compile-module {f['name']}"),
    "outside.ops": lambda f: (f"other: {f['share']:.0%} of the step, mostly tensor ops {_where(f['named'])} "
                              f"({', '.join(f['names']) or 'ops'})"),
    "outside.host": lambda f: f"host work between phases: {f['share']:.0%} of the step is outside them",
    "outside.reads": lambda f: (f"{f['n']:g} scalar read(s) a step outside the timed phases "
                                "(.item(), float())"),
}


def _names(rows: list) -> str:
    return ", ".join(f"{short_name(name, 32)} {fmt_ms(ms)}" for name, ms in rows[:SHOWN]) + (
        f" and {len(rows) - SHOWN} more" if len(rows) > SHOWN else "")


def _fused_into(f: dict) -> str:
    text = (f"top ops: {fmt_ms(f['fused_ms'])} a step of eager ops fused into {fmt_ms(f['graph_ms'])} of "
            "compiled graphs")
    n = f["slower"]
    return text + (f"; {n} op{'s' if n > 1 else ''} slower" if n else "")


OPS = {
    "ops.captures": lambda f: (f"{f['base']}'s {span_text(f['base_steps'])} vs {f['label']}'s "
                               f"{span_text(f['steps'])}, "
                               f"{'device time by op' if f['device'] else 'CPU self time by op'}, per step"),
    "ops.ran_eager": lambda f: (f"no call of a compiled graph in {f['label']}'s {span_text(f['steps'])}: its "
                                "ops ran eager, as in the eager run"),
    "ops.no_graph": lambda f: (f"top ops: no compiled graph ran in {f['label']}'s capture, so no eager op "
                               "was fused"),
    "ops.gone": lambda f: ("gone from the compiled top ops (fused into compiled kernels): "
                           + ", ".join(short_name(n, 32) for n in f["ops"][:SHOWN])),
    "ops.fused_count": lambda f: f"top ops: {f['n']} of eager's top ops fused into compiled graphs",
    "ops.split": lambda f: "step split: " + " · ".join(f"{p} {fmt_ms(a)} → {fmt_ms(b)}"
                                                      for p, a, b in f["parts"]),
    "ops.fused": lambda f: (f"gone from the compiled top ops (fused into compiled kernels), "
                            f"{fmt_ms(f['ms'])} in eager: {_names(f['ops'])}"),
    "ops.graphs": lambda f: f"the compiled graphs' own time (their fused kernels): {fmt_ms(f['ms'])}",
    "ops.faster": lambda f: f"faster (time saved a step): {_names(f['ops'])}",
    "ops.slower": lambda f: f"slower (time added a step): {_names(f['ops'])}",
    "ops.same": lambda f: f"about the same: {_names(f['ops'])}",
    "ops.glue": lambda f: (f"compile's own per-step work (guards, cache lookups, autograd wrappers): "
                           f"{fmt_ms(f['ms'])}"),
    "ops.gemm": lambda f: (f"{', '.join(short_name(n, 24) for n in f['ops'])} take the same time either way "
                           "(the same library kernels): lower precision "
                           "(--precision amp) or max-autotune are "
                           "the levers there"),
    "ops.fused_into": _fused_into,
}

TIPS = {  # the words that take no figure
    "syncs.cpu": (
        "on this CPU run a scalar read costs little; on a GPU each one makes the host wait for the device, "
        "and the next kernels wait for the host"),
    "syncs.keep_on_device": (
        "keep the value on the device: accumulate in a tensor and read it every N steps or when logging, not "
        "in every forward"),
    "syncs.capture_scalar": (
        "torch._dynamo.config.capture_scalar_outputs = True lets "
        "compile trace .item() without a graph break"),
    "outside.no_capture": (
        "no profiler capture of this run says what ran there: another module's forward, the loss, host work "
        "(.item(), logging) alike"),
    "outside.capture": (
        "a capture names it: --profile-at N (or p in the TUI) records the modules and ops outside the trained"
        " module"),
    "outside.unnamed": (
        "a compiled variant's capture does not name other modules (a global module hook would recompile its "
        "graphs): their ops count among the ops"),
    "outside.not_host": (
        "not host work: a module the optimizer does not train (a frozen loss network, a teacher, a metric) "
        "runs outside the forward tuimon times, the trained module's calls"),
    "outside.no_grad": (
        "what needs no gradient under torch.no_grad() (or inference_mode), and frozen parameters with "
        "requires_grad=False: autograd then keeps nothing for them"),
    "outside.move_in": (
        "it is the step's own tensor work (a loss, Gram matrices, normalization) outside the compiled module:"
        " move it into the module's forward, or torch.compile the function that computes it"),
    "outside.gpu_wait": (
        "on the GPU's timeline: time the device waited for the host between two phases, as after a scalar "
        "read (.item(), a tensor printed or compared)"),
    "outside.host_work": (
        "look for per-step host work between backward and the next forward: .item() or float(loss) every "
        "step, logging, metrics on the host, a checkpoint"),
    "outside.read_every": "keep values on the device and read them every N steps",
    "ops.rough": "two-step captures: a rough guide, not the steady-state numbers",
    "ops.got_slower": (
        "an op got slower compiled: try max-autotune, and keep the chrome trace of a capture (key p, or "
        "--profile-at) for a bug report"),
    "ops.overhead": (
        "compile's per-step overhead is a large share: fewer graphs "
        "(no breaks), or reduce-overhead on a GPU"),
}

WORDS = {**SYNCS, **OUTSIDE, **OPS, **fixed(TIPS)}
