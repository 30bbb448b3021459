"""CUDA graphs (mode reduce-overhead on a GPU): torch's reason for skipping them, or for
recording a new one per input size; on a CPU, that there are none to record."""

from __future__ import annotations

from tuimon.analysis.why.finding import HIGH, INFO, Context, Finding

PATTERNS = (
    (("mutated input", "mutation"), "a graph mutates one of its inputs in place (a buffer updated in "
     "forward, an in-place op on an argument): move the update out of the compiled region, or "
     "clone before mutating"),
    (("cpu device", "non-cuda", "cpu tensor"), "some inputs or ops of the graph are on the CPU: move "
     "them to the GPU, or keep them out of the compiled region"),
    (("incompatible op",), "the graph holds an op a CUDA graph cannot capture (a scalar read, a "
     "data-dependent shape): move it out of the compiled region"),
    (("dynamic shape", "distinct", "size"), "input sizes change: pad or bucket them to a few sizes, "
     "or torch._inductor.config.triton.cudagraph_skip_dynamic_graphs = True"),
    (("data pointer", "static input", "re-record"), "call torch.compiler.cudagraph_mark_step_begin() "
     "before each step, and .clone() outputs kept across steps"),
)


def cudagraphs(ctx: Context) -> list[Finding]:
    r = ctx.row
    if not r.cudagraphs:
        if r.mode in ("reduce-overhead", "max-autotune") and not ctx.on_gpu and r.device:
            return [Finding("cudagraphs", f"{r.mode} on a CPU: no CUDA graphs, so it runs as "
                            f"{'default' if r.mode == 'reduce-overhead' else 'max-autotune-no-cudagraphs'}",
                            [f"device {r.device}"], ["on a GPU, reduce-overhead replays each graph as "
                                                     "one CUDA graph launch"], INFO)]
        return []
    skipped = [c for c in r.cudagraphs if c["kind"] == "skipped"]
    rerecorded = [c for c in r.cudagraphs if c["kind"] == "rerecorded"]
    if skipped:
        title = f"CUDA graphs skipped: {skipped[0]['text'][:120]}"
    else:
        title = "CUDA graphs re-recorded: a new graph for each input size (time and memory each)"
    evidence = [f"torch: {c['text']} (×{c['count']})" for c in (skipped + rerecorded)[:4]]
    text = " ".join(c["text"].lower() for c in r.cudagraphs)
    advice = [tip for words, tip in PATTERNS if any(w in text for w in words)]
    advice.append("without CUDA graphs reduce-overhead is mode default: compare the two variants")
    return [Finding("cudagraphs", title, evidence, advice, HIGH)]
