"""The words of the compile rules' findings (analysis/why: breaks, recompiles, cudagraphs,
fallback, payoff, memory): one entry a code, a function of the finding's figures."""

from __future__ import annotations

from tuimon.fmt import fmt_bytes, fmt_ms, fmt_s
from tuimon.report.compile_text import fallback_text, nothing_text
from tuimon.report.trust_text import doubts_text


def fixed(tips: dict[str, str]) -> dict:
    """Words that take no figure, as entries of WORDS."""
    return {code: (lambda f, text=text: text) for code, text in tips.items()}


def span_text(steps: list[int]) -> str:
    """'capture of steps 11–12': the steps a profiler capture recorded."""
    return f"capture of steps {steps[0]}–{steps[-1]}" if steps else "capture"


def _places(n: int) -> str:
    return f"graph breaks at {n} place{'s' if n > 1 else ''}"


def _graphs(n: float) -> str:
    return f"{n:g} compiled graph{'s' if n != 1 else ''}"


def _whole(expected: int) -> str:
    return "forward and backward" if expected == 2 else "forward"


def _calls(f: dict) -> str:
    """The breaks cut the step's graphs: N pieces against a whole call's count (analysis/why/
    breaks.py graph_count), each of the module's calls a step when a loop calls it."""
    pieces = f"{_whole(f['expected'])} in pieces"
    if f["loop"]:
        return (f"{_places(f['places'])}: each of the module's ~{f['repeats']} calls a step runs "
                f"{_graphs(f['per_call'])} ({pieces}) instead of {f['expected']}, "
                f"{f['calls']:g} a step")
    return (f"{_places(f['places'])}: each step runs {_graphs(f['calls'])} ({pieces}) instead of "
            f"{f['expected']}")


def _whole_calls(f: dict) -> str:
    """The breaks cut none of the step's graphs: what they split off runs eager, or outside the
    steps; a loop's calls of the module are its own, not breaks."""
    whole = (f"{_graphs(f['per_call'])}, no more than one whole call of the module ({f['expected']}: "
             f"{_whole(f['expected'])})")
    if f["loop"]:
        return (f"{_places(f['places'])}, none in the step's graphs: its {f['calls']:g} compiled-graph "
                f"calls a step are the script calling the module ~{f['repeats']} times a step (a loop in "
                f"Python), each call {whole}")
    return (f"{_places(f['places'])}, none in the step's graphs: each step runs {whole}; what the "
            "breaks split off runs eager, or outside the steps")


def _repeated(f: dict) -> str:
    """Graphs that repeat within a step, the module's calls uncounted: either reading, said."""
    return (f"{_places(f['places'])}: each step runs {f['calls']:g} compiled-graph calls of {f['graphs']} "
            f"distinct graphs, each ~{f['repeats']} times: the script calling the module ~{f['repeats']} "
            "times a step (a loop in Python), or breaks between identical pieces (a repeated block); the "
            "module's calls a step would tell which, and none were counted (they are with the FLOPs, "
            "unless --no-flops)")


BREAKS = {
    "breaks.calls": _calls,
    "breaks.whole": _whole_calls,
    "breaks.repeated": _repeated,
    "breaks.graphs": lambda f: f"{_places(f['places'])}: {f['fwd']} forward graphs compiled where 1 would do",
    "breaks.graphs_whole": lambda f: (f"{_places(f['places'])}, yet {f['fwd']} forward graph compiled, "
                                      "as for a whole module: what the breaks split off runs eager"),
    "breaks.seen": lambda f: (f"{f['calls']:g} compiled-graph calls a step, {f['graphs']} distinct "
                              f"({span_text(f['steps'])})"),
    "breaks.compiled": lambda f: f"{f['fwd']} forward + {f['bwd']} backward graphs compiled",
    "breaks.at": lambda f: f"break at {f['where']} (×{f['count']}): {f['reason']}",
    "breaks.more": lambda f: f"and {f['n']} more (the compile pane, key c, lists them all)",
    "breaks.outside": lambda f: (f"{fmt_ms(f['ms'])} a step ({f['share']:.0%}) of forward and backward ran "
                                 "outside compiled graphs: the eager code between them, guard checks, "
                                 "autograd glue"),
    "breaks.hint": lambda f: f"{f['where']}: {f['hint']}",
    "capture.disturbed": lambda f: (f"{f['label']}'s {span_text(f['steps'])} ran at {fmt_ms(f['step_ms'])} a "
                                    f"step, {f['times']:.0f}× its run's quick steps (p10 "
                                    f"{fmt_ms(f['p10_ms'])}): something else slowed it (other processes, a "
                                    "compile), so its times are left out"),
    "torch.hint": lambda f: f"torch's hint: {f['text']}",
    "internal": lambda f: f"the {f['rule']} rule failed: {f['error']}: {f['message']}",
}

CHANGED = {"shapes": "input shapes changed", "value": "a Python value changed",
           "object": "another object reached the compiled code", "other": "guards failed"}


def _recompiles(f: dict) -> str:
    n = f["n"]
    text = f"{n} recompile{'s' if n != 1 else ''}: " + ", ".join(CHANGED[k] for k in f["kinds"])
    return text + ("; the recompile limit was hit: that code runs eagerly from then on" if f["limit"] else "")


def _compiles(f: dict) -> str:
    text = f"{f['compiles']} compiles in all, {fmt_s(f['compile_s'])} compiling"
    return text + (f" (and {f['val_compiles']} in validation passes, apart)" if f["val_compiles"] else "")


RECOMPILES = {
    "recompiles.title": _recompiles,
    "recompiles.count": _compiles,
    "recompiles.guard": lambda f: (f"guard failed: {f['guard'][:160]}"
                                   + (f" ({f['where']})" if f["where"] else "")),
    "recompiles.late": lambda f: f"in the steady state: {doubts_text(f['doubts'])}",
    "recompiles.limit": lambda f: f"{f['failed']}: {f['reason']} (×{f['count']})",
}

CUDAGRAPHS = {
    "cudagraphs.cpu": lambda f: (f"{f['mode']} on a CPU: no CUDA graphs, so it runs as "
                                 + ("default" if f["mode"] == "reduce-overhead"
                                    else "max-autotune-no-cudagraphs")),
    "cudagraphs.device": lambda f: f"device {f['device']}",
    "cudagraphs.skipped": lambda f: f"CUDA graphs skipped: {f['text'][:120]}",
    "cudagraphs.torch": lambda f: f"torch: {f['text']} (×{f['count']})",
}


def _frames(f: dict) -> str:
    n, graphs = f["n"], f["graphs"]
    return (f"{n} frame{'s' if n != 1 else ''} ran eager beside {graphs} compiled graph"
            f"{'s' if graphs != 1 else ''}: Dynamo could not compile "
            + ", ".join(f"{frame or 'a frame'}()" for frame in f["frames"]))


FALLBACK = {
    "fallback.nothing": lambda f: f"nothing was compiled — {nothing_text(f['why'])}",
    "fallback.all_failed": lambda f: (f"0 graphs in training: every compile Dynamo tried failed, so "
                                      f"{f['label']} ran the script's own eager code"),
    "fallback.failure": lambda f: (f"{fallback_text(f['failure'])} (×{f['count']}"
                                   f"{', in a validation pass' if f['validation'] else ''})"),
    "fallback.no_compile": lambda f: f"0 compiles in training: {f['label']} ran the script's own eager code",
    "fallback.val_compiles": lambda f: f"{f['n']} compile(s) in its validation passes, none in training",
    "fallback.frames": _frames,
}


def _warm(f: dict) -> str:
    if f["never"]:
        after = "never pays off"
    elif f["steps"] is not None:
        after = f"pays off after {f['steps']:,} steps (≈ {fmt_s(f['s'])})"
    else:
        after = "break-even unknown"
    return f"warm from its compile artifacts: compile {fmt_s(f['compile_s'])}, {after}"


PAYOFF = {
    "payoff.later": lambda f: f"pays off after {f['steps']:,} steps; this run had {f['had']}",
    "payoff.compile": lambda f: (f"compile {fmt_s(f['compile_s'])}, warm-up overhead "
                                 f"{fmt_s(f['overhead_s'])} in all; {f['speedup']:.2f}× per step"),
    "payoff.phase": lambda f: f"most of the compile: {f['name']} {fmt_s(f['s'])}",
    "payoff.warm": _warm,
    "payoff.longer": lambda f: (f"for a run longer than {f['steps']:,} steps (≈ {fmt_s(f['s'])}) compile "
                                "pays off"),
}

METRICS = {"cuda_peak_allocated": "CUDA peak allocated", "vram_max": "VRAM used (NVML peak)",
           "peak_rss": "peak RSS"}
MEMORY = {
    "memory.oom": lambda f: f"{f['label']} ran out of memory: {f['error']}",
    "memory.error": lambda f: f["text"],
    "memory.more": lambda f: (f"{(f['mine'] / f['theirs'] - 1) * 100:+.0f} % memory against {f['base']}: "
                              f"{METRICS[f['name']]} {fmt_bytes(f['mine'])}"),
    "memory.metric": lambda f: (f"{METRICS[f['name']]}: {fmt_bytes(f['mine'])} vs {fmt_bytes(f['theirs'])} "
                                f"({(f['mine'] / f['theirs'] - 1) * 100:+.0f} %)"),
}

TIPS = {  # the words that take no figure
    "breaks.print": (
        "logging or printing inside forward breaks the graph: log outside the compiled module, or every N "
        "steps"),
    "breaks.numpy": "numpy inside forward breaks the graph: use the torch op instead",
    "breaks.data_dependent": (
        "an op whose output shape depends on the data: torch._dynamo.config.capture_dynamic_output_shape_ops "
        "= True, or keep it outside the compiled region"),
    "breaks.fullgraph": (
        "torch.compile(model, fullgraph=True) stops at the first break with its stack; --torch-trace and "
        "tlparse show every break and why"),
    "recompiles.shapes": (
        "input shapes change between steps (a short last batch, variable lengths): pad or bucket them, "
        "DataLoader(drop_last=True), or mark the dimension dynamic from the start "
        "(torch._dynamo.mark_dynamic(x, 0), or torch.compile(dynamic=True)) so one graph serves all"),
    "recompiles.value": (
        "a Python number the forward reads changes between steps: keep it in a tensor (or, for a module's int"
        " attribute, torch._dynamo.config.allow_unspec_int_on_nn_module = True)"),
    "recompiles.object": (
        "a different object (a new module, optimizer or closure) reaches the compiled code each step: build "
        "it once and reuse it"),
    "recompiles.other": "TORCH_LOGS=recompiles prints every guard that failed, with its line",
    "recompiles.raise_limit": (
        "raise torch._dynamo.config.recompile_limit only when the variants are few and legitimate; better, "
        "remove what changes"),
    "cudagraphs.on_gpu": "on a GPU, reduce-overhead replays each graph as one CUDA graph launch",
    "cudagraphs.rerecorded": (
        "CUDA graphs re-recorded: a new graph for each input size (time and memory each)"),
    "cudagraphs.mutation": (
        "a graph mutates one of its inputs in place (a buffer updated in forward, an in-place op on an "
        "argument): move the update out of the compiled region, or clone before mutating"),
    "cudagraphs.cpu_inputs": (
        "some inputs or ops of the graph are on the CPU: move them to the GPU, or keep them out of the "
        "compiled region"),
    "cudagraphs.incompatible": (
        "the graph holds an op a CUDA graph cannot capture (a scalar read, a data-dependent shape): move it "
        "out of the compiled region"),
    "cudagraphs.sizes": (
        "input sizes change: pad or bucket them to a few sizes, or "
        "torch._inductor.config.triton.cudagraph_skip_dynamic_graphs = True"),
    "cudagraphs.mark_step": (
        "call torch.compiler.cudagraph_mark_step_begin() before each step, and .clone() outputs kept across "
        "steps"),
    "cudagraphs.compare": "without CUDA graphs reduce-overhead is mode default: compare the two variants",
    "fallback.compile_part": (
        "compile a part Dynamo can trace: --compile-module NAME compiles the first module of class NAME "
        "called (a block around the unsupported call, or beside it)"),
    "fallback.log_breaks": "TORCH_LOGS=graph_breaks prints where Dynamo stopped, with the user's line",
    "fallback.compile_module": (
        "--compile-module NAME compiles the first module of class NAME called (the model's class, or a "
        "block's), optimizer or not"),
    "fallback.keep_eager": (
        "keep it eager: torch.compile cannot differentiate a graph twice (torch.autograd.grad with "
        "create_graph); a part no double backward reaches (a loss network, a frozen encoder) can "
        "still be compiled with --compile-module NAME"),
    "fallback.compile_in_script": (
        "or call torch.compile(model) in the script: each variant then gets its mode"),
    "fallback.eager_gains_nothing": (
        "what runs eager gains nothing from compile: move it out of the hot path, or make it traceable"),
    "payoff.warm_start": (
        "a warm start cuts the compile: keep TORCHINDUCTOR_CACHE_DIR between runs, or carry this session's "
        "artifacts/ to the next (tuimon --cache-from SESSION measures it; docs/compile.md#warm-start)"),
    "payoff.autotune": "max-autotune spends its compile benchmarking kernels: mode default compiles faster",
    "memory.rss_compile": (
        "peak RSS counts the compile itself (Inductor generates and builds code in the process): part of it "
        "is a one-time cost"),
    "memory.graph_pools": (
        "reduce-overhead keeps a memory pool per CUDA graph: every graph break, recompile and new input size "
        "adds one"),
    "memory.autotune": "max-autotune benchmarks kernels with extra workspace: mode default uses less",
    "memory.activations": (
        "activation memory: torch._functorch.config.activation_memory_budget = 0.5 trades recompute for "
        "memory; activation checkpointing or a smaller batch do too"),
}

WORDS = {**BREAKS, **RECOMPILES, **CUDAGRAPHS, **FALLBACK, **PAYOFF, **MEMORY, **fixed(TIPS)}
