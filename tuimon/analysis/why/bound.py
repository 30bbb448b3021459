"""What bounds a step, for every variant (eager included): the data (input-bound), the optimizer
(optimizer-bound: torch.compile leaves ``optimizer.step()`` alone unless asked), the host
launching kernels (launch-bound: the GPU idles between kernels); and for a step bound by none of
them, where it goes (compute: forward and backward, what compile speeds up) and, for a compiled
variant, what compile did to each phase.

The evidence is the step's phases (analysis/stats/phases.py: every steady step split into data,
forward, backward, optimizer and other) when the run measured them, else the data wait and a
profiler capture's split; the profiler's device time and NVML say whether the GPU idled.
"""

from __future__ import annotations

from tuimon.analysis.stats.noise import ratio_interval
from tuimon.analysis.stats.phases import phase_speedup
from tuimon.analysis.stats.rows import RunStats
from tuimon.analysis.why.finding import HIGH, INFO, MEDIUM, Context, Finding, span
from tuimon.fmt import fmt_ms, fmt_ratio
from tuimon.variants import OPT, compiles_optimizer, model_mode

DATA_SHARE = 0.15  # a step waiting this much of its time for data: compile cannot help that part
IDLE_SHARE = 0.3  # the GPU idle this much of a step: the host does not keep it fed
LOW_UTIL = 60  # % NVML utilisation
BUSY_CORE = 85  # % of one core: the Python thread is saturated
OPTIMIZER_SHARE = 0.25
COMPUTE_SHARE = 0.5  # forward and backward this much of the step: compute-bound
GAP_SHARE = 0.1  # "other" this much of a GPU step: the GPU waited for the host between phases


def share(r: RunStats | None, name: str) -> float | None:
    p = (r.step_phases if r is not None else {}).get(name)
    return p.get("share") if p else None


def mean_ms(r: RunStats, name: str) -> float | None:
    p = r.step_phases.get(name)
    return p.get("mean_ms") if p else None


def step_ms(r: RunStats) -> float | None:
    """The mean step the phases' shares are of."""
    p = r.step_phases.get("other") or next(iter(r.step_phases.values()), None)
    return p["mean_ms"] / p["share"] if p and p.get("share") else None


def input_bound(ctx: Context) -> list[Finding]:
    r, b = ctx.row, ctx.baseline
    if share(r, "data") is not None:
        wait, step, frac = mean_ms(r, "data"), step_ms(r), share(r, "data")
        base = (mean_ms(b, "data"), step_ms(b), share(b, "data")) if b is not None and b is not r \
            and share(b, "data") is not None else None
    elif r.mean_data_ms and r.median_ms:
        wait, step, frac = r.mean_data_ms, r.median_ms, r.mean_data_ms / r.median_ms
        base = (b.mean_data_ms, b.median_ms, b.mean_data_ms / b.median_ms) if b is not None and \
            b is not r and b.mean_data_ms and b.median_ms else None
    else:
        return []
    if frac < DATA_SHARE:
        return []
    evidence = [f"{r.label} waits {fmt_ms(wait)} for its batch in a {fmt_ms(step)} step ({frac:.0%})"]
    if ctx.on_gpu and r.step_phases:
        evidence[0] += ": on the GPU's timeline, the wait it could not hide behind earlier work"
    if base is not None:
        evidence.append(f"{b.label}: {fmt_ms(base[0])} of {fmt_ms(base[1])} ({base[2]:.0%})")
        if r.compiled and base[1] > step and frac > base[2]:
            evidence.append(f"compile made the rest of the step shorter ({fmt_ms(base[1] - base[0])} → "
                            f"{fmt_ms(step - wait)}) but not the wait: a faster step waiting on the "
                            f"same loader, {frac:.0%} of it now against {base[2]:.0%} in {b.label}")
    advice = ["compile speeds up the model only: a step cannot get shorter than its wait for data",
              "DataLoader(num_workers=N, pin_memory=True, persistent_workers=True, prefetch_factor=4); "
              "augmentation on the GPU; a cached or pre-decoded data set"]
    return [Finding("input_bound", f"input-bound: {frac:.0%} of each step waits for data", evidence,
                    advice, HIGH if frac >= 2 * DATA_SHARE else MEDIUM, wait)]


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
    gap = share(r, "other")
    if gap is not None and gap >= GAP_SHARE:
        evidence.append(f"{gap:.0%} of the step on the GPU's timeline falls between its phases "
                        "(other): time the GPU waited for the host to launch the next part")
    if r.cpu_mean is not None and r.cpu_mean >= BUSY_CORE:
        evidence.append(f"the run's CPU at {r.cpu_mean:.0f} % of a core: the Python thread is saturated")
    advice = []
    if model_mode(r.mode) != "reduce-overhead":
        advice.append("mode reduce-overhead replays each graph as one CUDA graph launch")
    advice += ["a larger batch gives every kernel more work for the same launches",
               "fewer host-side operations a step: hooks, logging, scalar reads, Python loops over tensors"]
    frac = f"{idle:.0%}" if idle is not None else f"{100 - util:.0f} %"
    cost = idle * cap["step_ms"] if idle is not None else None
    return [Finding("launch_bound", f"launch-bound: the GPU idles {frac} of the step, waiting for the host",
                    evidence, advice, HIGH if (idle or 0) >= 0.5 else MEDIUM, cost)]


def twin(ctx: Context) -> RunStats | None:
    """The same variant with its optimizer step compiled (or, for a ``+opt`` row, without)."""
    r = ctx.row
    mode = model_mode(r.mode) if compiles_optimizer(r.mode) else r.mode + OPT
    return next((x for x in ctx.rows if x.mode == mode and x.precision == r.precision
                 and x.axes == r.axes and x.median_ms and x.step_phases), None)


def optimizer_bound(ctx: Context) -> list[Finding]:
    """optimizer.step() as a large share of the step (from the phases; without them, from a
    compiled variant's capture): torch.compile compiles the model, not the optimizer step,
    unless asked (MODE+opt races it)."""
    r = ctx.row
    frac = share(r, "optimizer")
    if frac is None:
        return _eager_optimizer_in_capture(ctx)
    if frac < OPTIMIZER_SHARE:
        return []
    opt, step = mean_ms(r, "optimizer"), step_ms(r)
    mine = compiles_optimizer(r.mode)
    evidence = [f"optimizer.step() {fmt_ms(opt)} of a {fmt_ms(step)} step ({frac:.0%})"
                + (" with the optimizer step compiled" if mine else "")]
    b = ctx.baseline
    p = r.step_phases["optimizer"]
    if r.compiled and b is not None and b is not r and p.get("speedup") is not None:
        before = fmt_ms(b.step_phases["optimizer"]["median_ms"])
        evidence.append(f"against {b.label}: optimizer's median {before} → {fmt_ms(p['median_ms'])} "
                        f"({_ratio(p)})" + ("" if mine else ": torch.compile compiles the model's "
                                             "forward and backward, not optimizer.step(), unless asked"))
    elif not r.compiled:
        evidence.append("torch.compile of the model leaves optimizer.step() as it is: a compiled "
                        "variant keeps this part unless it compiles the optimizer step too")
    advice = []
    other = twin(ctx)
    if other is not None:
        evidence.append(_raced(ctx, other, mine))
    elif not mine:
        advice.append(f"race the optimizer step compiled too: --compile-optimizer (mode "
                      f"{model_mode(r.mode) if r.compiled else 'default'}{OPT})")
    advice.append("a fused or foreach optimizer: torch.optim.AdamW(..., fused=True) on CUDA, foreach=True")
    if not mine:
        advice.append("or compile it by hand: a function that calls opt.step(), under torch.compile")
    title = f"optimizer-bound: optimizer.step() is {frac:.0%} of the step"
    return [Finding("optimizer", title, evidence, advice, HIGH if frac >= 0.5 else MEDIUM, opt)]


def _ratio(p: dict) -> str:
    return fmt_ratio(p["speedup"], p.get("speedup_lo"), p.get("speedup_hi"))


def _raced(ctx: Context, other: RunStats, mine: bool) -> str:
    """The +opt twin's answer: its optimizer phase and its whole step against this row's, with
    the step ratio's interval (noise.py, as every speedup's)."""
    with_opt, without = (ctx.row, other) if mine else (other, ctx.row)
    noise = ctx.summary.noise
    found = phase_speedup(without, with_opt, "optimizer", noise) if noise is not None else None
    step = without.median_ms / with_opt.median_ms
    interval = ratio_interval(without, with_opt, step, noise) if noise is not None else None
    text = f"{with_opt.label} (its optimizer step compiled too) raced {without.label}: "
    if found is not None:
        text += f"optimizer {found[0]:.2f}× faster, "
    text += f"the whole step {step:.2f}×"
    if interval is not None:
        lo, hi = interval
        verdict = ("compiling the optimizer step pays" if lo > 1.0 else "it does not pay here"
                   if hi < 1.0 else "no gain beyond noise")
        text += f" (95 % CI {lo:.2f}–{hi:.2f}): {verdict}"
    return text


def _eager_optimizer_in_capture(ctx: Context) -> list[Finding]:
    cap = ctx.capture
    split = (cap or {}).get("split") or {}
    graphs = (cap or {}).get("compiled_graphs") or {}
    opt, step = split.get("optimizer_ms"), split.get("step_ms")
    if (not ctx.row.compiled or not ctx.row_timed or not opt or not step
            or opt / step < OPTIMIZER_SHARE or graphs.get("optimizer_ms")):
        return []
    evidence = [f"optimizer {fmt_ms(opt)} of a {fmt_ms(step)} step ({opt / step:.0%}) in {ctx.row.label}'s "
                f"{span(cap)}, with no compiled graph inside"]
    base = ((ctx.base_capture or {}).get("split") or {})
    if base.get("optimizer_ms") and "base" not in ctx.disturbed:
        evidence.append(f"{ctx.baseline.label}: optimizer {fmt_ms(base['optimizer_ms'])}: compiling the "
                        "model left it as it was")
    advice = [f"compile the optimizer step too: --compile-optimizer (mode {model_mode(ctx.row.mode)}{OPT})",
              "a fused or foreach optimizer: torch.optim.AdamW(..., fused=True) on CUDA, foreach=True"]
    return [Finding("optimizer", f"the optimizer step runs eagerly: {opt / step:.0%} of the compiled step",
                    evidence, advice, MEDIUM, opt)]


def phase_split(ctx: Context) -> list[Finding]:
    """Where the step goes (every variant with phases): compute-bound when forward and backward
    are most of it; for a compiled variant, what compile did to each phase."""
    r, b = ctx.row, ctx.baseline
    if not r.step_phases:
        return []
    names = [n for n in ("forward", "backward", "optimizer", "data", "eval", "other") if n in r.step_phases]
    split = " · ".join(f"{n} {r.step_phases[n]['share']:.0%}" for n in names
                       if r.step_phases[n].get("share") is not None)
    evidence = [f"{r.label}'s steady step: {split}"]
    if r.phases_missing:
        evidence.append(f"not seen: {', '.join(r.phases_missing)} (in other)")
    compute = (share(r, "forward") or 0.0) + (share(r, "backward") or 0.0)
    faster = [n for n in names if r.step_phases[n].get("speedup") is not None]
    if r.compiled and b is not None and faster:
        for n in faster:
            p = r.step_phases[n]
            evidence.append(f"{n}: {fmt_ms(b.step_phases[n]['median_ms'])} → {fmt_ms(p['median_ms'])} "
                            f"({_ratio(p)})")
        title = "by phase against {}: {}".format(b.label, " · ".join(
            f"{n} {r.step_phases[n]['speedup']:.2f}×" for n in faster))
        return [Finding("phases", title, evidence, [], INFO)]
    if compute < COMPUTE_SHARE:
        return [Finding("phases", f"where the step goes: {split}", evidence, [], INFO)]
    advice = ([] if r.compiled else ["forward and backward are what torch.compile speeds up: race a "
                                     "compiled mode (--modes eager,default)"])
    return [Finding("phases", f"compute-bound: forward and backward are {compute:.0%} of the step",
                    evidence, advice, INFO)]
