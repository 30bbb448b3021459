"""CUDA graphs (mode reduce-overhead on a GPU): torch's reason for skipping them, or for
recording a new one per input size; on a CPU, that there are none to record."""

from __future__ import annotations

from tuimon.analysis.stats.point import point
from tuimon.analysis.why.finding import HIGH, INFO, Context, Finding

# The words in torch's reasons -> the tip's code (report/why_words/compiled.py words it).
PATTERNS = (
    (("mutated input", "mutation"), "cudagraphs.mutation"),
    (("cpu device", "non-cuda", "cpu tensor"), "cudagraphs.cpu_inputs"),
    (("incompatible op",), "cudagraphs.incompatible"),
    (("dynamic shape", "distinct", "size"), "cudagraphs.sizes"),
    (("data pointer", "static input", "re-record"), "cudagraphs.mark_step"),
)


def cudagraphs(ctx: Context) -> list[Finding]:
    r = ctx.row
    if not r.compile.cudagraphs:
        if r.mode in ("reduce-overhead", "max-autotune") and not ctx.on_gpu and r.device:
            return [Finding("cudagraphs", point("cudagraphs.cpu", mode=r.mode),
                            [point("cudagraphs.device", device=r.device)], [point("cudagraphs.on_gpu")],
                            INFO)]
        return []
    skipped = [c for c in r.compile.cudagraphs if c["kind"] == "skipped"]
    rerecorded = [c for c in r.compile.cudagraphs if c["kind"] == "rerecorded"]
    # re-recorded: a new graph for each input size (time and memory each)
    what = point("cudagraphs.skipped", text=skipped[0]["text"]) if skipped else point("cudagraphs.rerecorded")
    evidence = [point("cudagraphs.torch", text=c["text"], count=c["count"])
                for c in (skipped + rerecorded)[:4]]
    text = " ".join(c["text"].lower() for c in r.compile.cudagraphs)
    advice = [point(code) for words, code in PATTERNS if any(w in text for w in words)]
    advice.append(point("cudagraphs.compare"))
    return [Finding("cudagraphs", what, evidence, advice, HIGH)]
