"""Where the step waits for something compile cannot speed up: the data (input-bound), the host
launching kernels (launch-bound: the GPU idles between kernels), and an optimizer step that
still runs eagerly."""

from __future__ import annotations

from tuimon.analysis.why.finding import HIGH, MEDIUM, Context, Finding, span
from tuimon.fmt import fmt_ms

DATA_SHARE = 0.15  # a step waiting this much of its time for data: compile cannot help that part
IDLE_SHARE = 0.3  # the GPU idle this much of a step: the host does not keep it fed
LOW_UTIL = 60  # % NVML utilisation
BUSY_CORE = 85  # % of one core: the Python thread is saturated
OPTIMIZER_SHARE = 0.25


def input_bound(ctx: Context) -> list[Finding]:
    r = ctx.row
    if not r.mean_data_ms or not r.median_ms:
        return []
    share = r.mean_data_ms / r.median_ms
    if share < DATA_SHARE:
        return []
    evidence = [f"{r.label} waits {fmt_ms(r.mean_data_ms)} for its batch in a {fmt_ms(r.median_ms)} "
                f"step ({share:.0%})"]
    b = ctx.baseline
    if b is not None and b.mean_data_ms and b.median_ms:
        evidence.append(f"{b.label}: {fmt_ms(b.mean_data_ms)} of {fmt_ms(b.median_ms)} "
                        f"({b.mean_data_ms / b.median_ms:.0%})")
    advice = ["compile speeds up the model only: a step cannot get shorter than its wait for data",
              "DataLoader(num_workers=N, pin_memory=True, persistent_workers=True, prefetch_factor=4); "
              "augmentation on the GPU; a cached or pre-decoded data set"]
    return [Finding("input_bound", f"input-bound: {share:.0%} of each step waits for data", evidence,
                    advice, HIGH if share >= 2 * DATA_SHARE else MEDIUM, r.mean_data_ms)]


def launch_bound(ctx: Context) -> list[Finding]:
    r, cap = ctx.row, ctx.capture
    if not ctx.on_gpu:
        return []
    evidence, idle = [], None
    if cap and cap.get("device_busy_ms") is not None and cap.get("step_ms") and ctx.row_timed:
        idle = max(0.0, 1.0 - cap["device_busy_ms"] / cap["step_ms"])
        evidence.append(f"the GPU ran kernels {fmt_ms(cap['device_busy_ms'])} of a "
                        f"{fmt_ms(cap['step_ms'])} step: idle {idle:.0%} ({span(cap)})")
    util = r.gpu_util_mean
    if util is not None:
        evidence.append(f"GPU utilisation (NVML) {util:.0f} % on average")
    if not ((idle is not None and idle >= IDLE_SHARE) or (util is not None and util < LOW_UTIL)):
        return []
    if r.cpu_mean is not None and r.cpu_mean >= BUSY_CORE:
        evidence.append(f"the run's CPU at {r.cpu_mean:.0f} % of a core: the Python thread is saturated")
    advice = []
    if r.mode != "reduce-overhead":
        advice.append("mode reduce-overhead replays each graph as one CUDA graph launch")
    advice += ["a larger batch gives every kernel more work for the same launches",
               "fewer host-side operations a step: hooks, logging, scalar reads, Python loops over tensors"]
    share = f"{idle:.0%}" if idle is not None else f"{100 - util:.0f} %"
    cost = idle * cap["step_ms"] if idle is not None else None
    return [Finding("launch_bound", f"launch-bound: the GPU idles {share} of the step, waiting for the host",
                    evidence, advice, HIGH if (idle or 0) >= 0.5 else MEDIUM, cost)]


def eager_optimizer(ctx: Context) -> list[Finding]:
    cap = ctx.capture
    split = (cap or {}).get("split") or {}
    graphs = (cap or {}).get("compiled_graphs") or {}
    opt, step = split.get("optimizer_ms"), split.get("step_ms")
    if not ctx.row_timed or not opt or not step or opt / step < OPTIMIZER_SHARE or graphs.get("optimizer_ms"):
        return []
    evidence = [f"optimizer {fmt_ms(opt)} of a {fmt_ms(step)} step ({opt / step:.0%}) in {ctx.row.label}'s "
                f"{span(cap)}, with no compiled graph inside"]
    base = ((ctx.base_capture or {}).get("split") or {})
    if base.get("optimizer_ms") and "base" not in ctx.disturbed:
        evidence.append(f"{ctx.baseline.label}: optimizer {fmt_ms(base['optimizer_ms'])}: compiling the "
                        "model left it as it was")
    advice = ["compile the optimizer step too: a function that calls opt.step(), under torch.compile",
              "a fused or foreach optimizer: torch.optim.AdamW(..., fused=True) on CUDA, foreach=True"]
    return [Finding("optimizer", f"the optimizer step runs eagerly: {opt / step:.0%} of the compiled step",
                    evidence, advice, MEDIUM, opt)]
