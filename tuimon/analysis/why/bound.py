"""What bounds a step, for every variant (eager included): the data (input-bound), the optimizer
(optimizer-bound: torch.compile leaves ``optimizer.step()`` alone unless asked), the host
launching kernels (launch-bound), or else compute, with what compile did to each phase
(docs/why.md#what-bounds-a-step). The evidence is the step's phases when the run measured them,
else the data wait and a capture's split; device time and NVML say whether the GPU idled."""

from __future__ import annotations

from tuimon.analysis.stats.noise import ratio_interval, untold_between
from tuimon.analysis.stats.phases import phase_speedup
from tuimon.analysis.stats.point import Point, point
from tuimon.analysis.stats.rows import RunStats
from tuimon.analysis.why.finding import HIGH, INFO, MEDIUM, Context, Finding, span
from tuimon.variants import OPT, compiles_optimizer, model_mode

DATA_SHARE = 0.15  # a step waiting this much of its time for data: compile cannot help that part
IDLE_SHARE = 0.3  # the GPU idle this much of a step: the host does not keep it fed
LOW_UTIL = 60  # % NVML utilisation
BUSY_CORE = 85  # % of one core: the Python thread is saturated
OPTIMIZER_SHARE = 0.25
COMPUTE_SHARE = 0.5  # forward and backward this much of the step: compute-bound
GAP_SHARE = 0.1  # "other" this much of a GPU step: the GPU waited for the host between phases


def share(r: RunStats | None, name: str) -> float | None:
    p = (r.phases.step_phases if r is not None else {}).get(name)
    return p.get("share") if p else None


def mean_ms(r: RunStats, name: str) -> float | None:
    p = r.phases.step_phases.get(name)
    return p.get("mean_ms") if p else None


def step_ms(r: RunStats) -> float | None:
    """The mean step the phases' shares are of."""
    p = r.phases.step_phases.get("other") or next(iter(r.phases.step_phases.values()), None)
    return p["mean_ms"] / p["share"] if p and p.get("share") else None


def input_bound(ctx: Context) -> list[Finding]:
    r, b = ctx.row, ctx.baseline
    if share(r, "data") is not None:
        wait, step, frac = mean_ms(r, "data"), step_ms(r), share(r, "data")
        base = (mean_ms(b, "data"), step_ms(b), share(b, "data")) if b is not None and b is not r \
            and share(b, "data") is not None else None
    elif r.timing.mean_data_ms and r.timing.median_ms:
        wait, step = r.timing.mean_data_ms, r.timing.median_ms
        frac = wait / step
        base = (b.timing.mean_data_ms, b.timing.median_ms,
                b.timing.mean_data_ms / b.timing.median_ms) if b is not None and \
            b is not r and b.timing.mean_data_ms and b.timing.median_ms else None
    else:
        return []
    if frac < DATA_SHARE:
        return []
    # on a GPU's timeline: the wait it could not hide behind earlier work
    evidence = [point("bound.wait", label=r.label, wait=wait, step=step, share=frac,
                      timeline=bool(ctx.on_gpu and r.phases.step_phases))]
    if base is not None:
        evidence.append(point("bound.base_wait", label=b.label, wait=base[0], step=base[1], share=base[2]))
        if r.compiled and base[1] > step and frac > base[2]:  # a faster step waiting on the same loader
            evidence.append(point("bound.same_wait", before=base[1] - base[0], after=step - wait,
                                  share=frac, base_share=base[2], base=b.label))
    advice = [point("bound.model_only"), point("bound.loader")]
    return [Finding("input_bound", point("bound.input", share=frac), evidence, advice,
                    HIGH if frac >= 2 * DATA_SHARE else MEDIUM, wait)]


def launch_bound(ctx: Context) -> list[Finding]:
    r, cap = ctx.row, ctx.capture
    if not ctx.on_gpu:
        return []
    evidence, idle = [], None
    if cap and cap.get("device_busy_ms") is not None and cap.get("step_ms") and ctx.row_timed:
        idle = max(0.0, 1.0 - cap["device_busy_ms"] / cap["step_ms"])
        evidence.append(point("bound.kernels", busy_ms=cap["device_busy_ms"], step_ms=cap["step_ms"],
                              idle=idle, steps=span(cap)))
    util = r.probes.gpu_util_mean
    if util is not None:
        evidence.append(point("bound.util", util=util))
    if not ((idle is not None and idle >= IDLE_SHARE) or (util is not None and util < LOW_UTIL)):
        return []
    gap = share(r, "other")
    if gap is not None and gap >= GAP_SHARE:  # the GPU waited for the host to launch the next part
        evidence.append(point("bound.gap", share=gap))
    if r.probes.cpu_mean is not None and r.probes.cpu_mean >= BUSY_CORE:  # the Python thread is saturated
        evidence.append(point("bound.cpu", cpu=r.probes.cpu_mean))
    advice = []
    if model_mode(r.mode) != "reduce-overhead":
        advice.append(point("bound.reduce_overhead"))
    advice += [point("bound.batch"), point("bound.host_ops")]
    cost = idle * cap["step_ms"] if idle is not None else None
    what = point("bound.launch", idle=idle, util=util)  # the GPU idles, waiting for the host
    return [Finding("launch_bound", what, evidence, advice, HIGH if (idle or 0) >= 0.5 else MEDIUM, cost)]


def twin(ctx: Context) -> RunStats | None:
    """The same variant with its optimizer step compiled (or, for a ``+opt`` row, without)."""
    r = ctx.row
    mode = model_mode(r.mode) if compiles_optimizer(r.mode) else r.mode + OPT
    return next((x for x in ctx.rows if x.mode == mode and x.precision == r.precision
                 and x.axes == r.axes and x.timing.median_ms and x.phases.step_phases), None)


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
    evidence = [point("bound.optimizer", ms=opt, step=step, share=frac, compiled=mine)]
    b = ctx.baseline
    p = r.phases.step_phases["optimizer"]
    if r.compiled and b is not None and b is not r and p.get("speedup") is not None:
        evidence.append(point("bound.optimizer_vs", base=b.label, after=p["median_ms"], ratio=_ratio(p),
                              before=b.phases.step_phases["optimizer"]["median_ms"], compiled=mine,
                              untold=p.get("untold")))
    elif not r.compiled:  # a compiled variant keeps this part unless it compiles the optimizer too
        evidence.append(point("bound.optimizer_kept"))
    advice = []
    other = twin(ctx)
    if other is not None:
        evidence.append(_raced(ctx, other, mine))
    elif not mine:
        mode = model_mode(r.mode) if r.compiled else "default"
        advice.append(point("bound.race_optimizer", mode=f"{mode}{OPT}"))
    advice.append(point("bound.fused"))
    if not mine:
        advice.append(point("bound.by_hand"))
    return [Finding("optimizer", point("bound.optimizer_bound", share=frac), evidence, advice,
                    HIGH if frac >= 0.5 else MEDIUM, opt)]


def _ratio(p: dict) -> tuple:
    return p["speedup"], p.get("speedup_lo"), p.get("speedup_hi")


def _raced(ctx: Context, other: RunStats, mine: bool) -> Point:
    """The +opt twin's answer: its optimizer phase and its whole step against this row's, with
    the step ratio's interval (noise.py, as every speedup's): ``pays`` (beyond noise), ``not_here``
    (slower beyond noise), ``noise``."""
    with_opt, without = (ctx.row, other) if mine else (other, ctx.row)
    noise = ctx.summary.noise
    found = phase_speedup(without, with_opt, "optimizer", noise) if noise is not None else None
    step = without.timing.median_ms / with_opt.timing.median_ms
    interval = ratio_interval(without, with_opt, step, noise) if noise is not None else None
    lo, hi = interval or (None, None)
    answer = None if interval is None else "pays" if lo > 1.0 else "not_here" if hi < 1.0 else "noise"
    wide = untold_between(without, with_opt, lo, hi, noise) if noise is not None else None
    return point("bound.raced", with_opt=with_opt.label, without=without.label,
                 optimizer=found[0] if found is not None else None, step=step, lo=lo, hi=hi, answer=answer,
                 untold=wide)


def _eager_optimizer_in_capture(ctx: Context) -> list[Finding]:
    cap = ctx.capture
    split = (cap or {}).get("split") or {}
    graphs = (cap or {}).get("compiled_graphs") or {}
    opt, step = split.get("optimizer_ms"), split.get("step_ms")
    if (not ctx.row.compiled or not ctx.row_timed or not opt or not step
            or opt / step < OPTIMIZER_SHARE or graphs.get("optimizer_ms")):
        return []
    evidence = [point("bound.optimizer_captured", ms=opt, step=step, share=opt / step, label=ctx.row.label,
                      steps=span(cap))]
    base = ((ctx.base_capture or {}).get("split") or {})
    if base.get("optimizer_ms") and "base" not in ctx.disturbed:  # compiling the model left it as it was
        evidence.append(point("bound.optimizer_base", label=ctx.baseline.label, ms=base["optimizer_ms"]))
    advice = [point("bound.compile_optimizer", mode=f"{model_mode(ctx.row.mode)}{OPT}"), point("bound.fused")]
    return [Finding("optimizer", point("bound.optimizer_eager", share=opt / step), evidence, advice,
                    MEDIUM, opt)]


def phase_split(ctx: Context) -> list[Finding]:
    """Where the step goes (every variant with phases): compute-bound when forward and backward
    are most of it; for a compiled variant, what compile did to each phase."""
    r, b = ctx.row, ctx.baseline
    if not r.phases.step_phases:
        return []
    names = [n for n in ("forward", "backward", "optimizer", "data", "eval", "other")
             if n in r.phases.step_phases]
    split = [(n, r.phases.step_phases[n]["share"]) for n in names
             if r.phases.step_phases[n].get("share") is not None]
    evidence = [point("bound.split", label=r.label, split=split)]
    if r.phases.phases_missing:  # counted in other
        evidence.append(point("bound.not_seen", names=list(r.phases.phases_missing)))
    compute = (share(r, "forward") or 0.0) + (share(r, "backward") or 0.0)
    faster = [n for n in names if r.phases.step_phases[n].get("speedup") is not None]
    if r.compiled and b is not None and faster:
        evidence += [point("bound.phase", name=n, before=b.phases.step_phases[n]["median_ms"],
                           after=r.phases.step_phases[n]["median_ms"], ratio=_ratio(r.phases.step_phases[n]),
                           untold=r.phases.step_phases[n].get("untold"))
                     for n in faster]
        what = point("bound.by_phase", base=b.label,  # a figure too wide to tell: None
                     speedups=[(n, None if r.phases.step_phases[n].get("untold") else
                                r.phases.step_phases[n]["speedup"]) for n in faster])
        return [Finding("phases", what, evidence, [], INFO)]
    if compute < COMPUTE_SHARE:
        return [Finding("phases", point("bound.where", split=split), evidence, [], INFO)]
    advice = [] if r.compiled else [point("bound.race_compiled")]  # what torch.compile speeds up
    return [Finding("phases", point("bound.compute", share=compute), evidence, advice, INFO)]
