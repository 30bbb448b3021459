"""How close each phase comes to what this machine's GEMMs reach (MFU against the measured peak,
stats/flops.py): near it, compute-bound; far below it, moving memory or waiting on kernel
launches. The datasheet peak is not used here: no real step reaches it (a GEMM benchmark reaches
60-90 % of it), so "near the peak" against it would never be said."""

from __future__ import annotations

from tuimon.analysis.stats.point import point
from tuimon.analysis.why.finding import INFO, MEDIUM, Context, Finding
from tuimon.variants import model_mode

NEAR = 0.5  # a phase at half the measured peak or more: compute-bound
FAR = 0.1  # under a tenth of it: memory- or launch-bound
MIN_SHARE = 0.1  # a phase this small a share of the step is not worth a finding
COMPUTE = ("forward", "backward")


def flop_use(ctx: Context) -> list[Finding]:
    r = ctx.row
    f = r.flops
    if not f.counted:
        return []
    over = list(f.mfu_over)
    findings = []
    if over:
        findings.append(Finding("flops", point("flops.over_peak", over=over, basis=f.mfu_basis),
                                [_use(r, n) for n in COMPUTE if _use(r, n) is not None],
                                [point("flops.check_peak")], INFO))
    near, far = [], []
    for name in COMPUTE:
        mfu = f.part(name).mfu_measured
        share = (r.phases.step_phases.get(name) or {}).get("share")
        if mfu is None or mfu > 1.0 or share is None or share < MIN_SHARE:
            continue
        if mfu >= NEAR:
            near.append(name)
        elif mfu < FAR:
            far.append(name)
    if near:
        advice = []
        if f.precision in ("fp32", "tf32"):
            advice.append(point("flops.lower_precision", precision=f.precision))
        if model_mode(r.mode) != "max-autotune":
            advice.append(point("flops.max_autotune"))
        findings.append(Finding("flops", point("flops.compute_bound", phases=near),
                                [_use(r, n) for n in near], advice, MEDIUM))
    if far:
        advice = [point("flops.fuse")] if not r.compiled else []
        if ctx.on_gpu:
            advice.append(point("flops.launches", reduce_overhead=model_mode(r.mode) != "reduce-overhead"))
        advice.append(point("flops.batch"))
        findings.append(Finding("flops", point("flops.far_below", phases=far),
                                [_use(r, n) for n in far], advice, INFO))
    return findings


def _use(r, name: str):
    f = r.flops
    rate, mfu = f.part(name).flop_s, f.part(name).mfu_measured
    if rate is None or mfu is None:
        return None
    return point("flops.phase_use", label=r.label, name=name, flop_s=rate, mfu=mfu,
                 over=f"{name}:measured" in f.mfu_over, peak=f.peak_measured,
                 precision=f.precision)
