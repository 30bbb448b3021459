"""Memory: a compiled variant that ran out of it, or peaks well above its eager baseline."""

from __future__ import annotations

from tuimon.analysis.why.finding import HIGH, INFO, MEDIUM, Context, Finding
from tuimon.fmt import fmt_bytes

MORE = 1.1  # 10 % above the baseline ...
MIN_BYTES = 64 * 2 ** 20  # ... and 64 MiB at least
METRICS = (("cuda_peak_allocated", "CUDA peak allocated"), ("vram_max", "VRAM used (NVML peak)"),
           ("peak_rss", "peak RSS"))


def memory(ctx: Context) -> list[Finding]:
    r, b = ctx.row, ctx.baseline
    out = []
    if r.failure_kind in ("oom-cuda", "oom-host"):
        out.append(Finding("memory", f"{r.label} ran out of memory: {r.error}", [r.error or r.failure_kind],
                           _advice(ctx), HIGH))
    if b is None:
        return out
    pairs = [(name, getattr(r, attr), getattr(b, attr)) for attr, name in METRICS
             if getattr(r, attr) and getattr(b, attr)]
    if not pairs:
        return out
    name, mine, theirs = pairs[0]  # the most telling one measured in both
    if mine < theirs * MORE or mine - theirs < MIN_BYTES:
        return out
    evidence = [f"{n}: {fmt_bytes(x)} vs {fmt_bytes(y)} ({(x / y - 1) * 100:+.0f} %)" for n, x, y in pairs]
    if name == "peak RSS":
        evidence.append("peak RSS counts the compile itself (Inductor generates and builds code in the "
                        "process): part of it is a one-time cost")
    title = f"{(mine / theirs - 1) * 100:+.0f} % memory against {b.label}: {name} {fmt_bytes(mine)}"
    # Peak RSS holds the compile's own peak: worth saying, alarming only when far above.
    severity = HIGH if mine > 1.3 * theirs and name != "peak RSS" else MEDIUM
    if name == "peak RSS" and mine <= 1.3 * theirs:
        severity = INFO
    out.append(Finding("memory", title, evidence, _advice(ctx), severity))
    return out


def _advice(ctx: Context) -> list[str]:
    tips = []
    if ctx.row.mode == "reduce-overhead":
        tips.append("reduce-overhead keeps a memory pool per CUDA graph: every graph break, recompile "
                    "and new input size adds one")
    if ctx.row.mode.startswith("max-autotune"):
        tips.append("max-autotune benchmarks kernels with extra workspace: mode default uses less")
    tips.append("activation memory: torch._functorch.config.activation_memory_budget = 0.5 trades "
                "recompute for memory; activation checkpointing or a smaller batch do too")
    return tips
