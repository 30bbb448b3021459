"""Who the verdict weighs (stats/verdict.py): the reference (what the user runs today), each
variant as a candidate or not — failed, diverged, losses off its reference's, too few steady
steps — with the reason, whether a comparison can be trusted at all (``reliability``), and the
least run length that would give an answer (``longer``)."""

from __future__ import annotations

import math

from tuimon.analysis.stats.faults import faults_gap
from tuimon.analysis.stats.load import load_gap
from tuimon.analysis.stats.rows import RunStats, SessionSummary
from tuimon.axes import baseline
from tuimon.variants import SCRIPT

REFERENCE_PRECISIONS = ("fp32", "script")
# Steady steps a variant needs before it is weighed: below four batches of five, MSER-5 cannot
# tell warm-up from steady state (steady_state.mser5 looks for none), and the median's interval
# is little more than the range of the few steps there are (all from a turn or two).
MIN_STEADY = 20


def pct(share: float) -> str:
    return f"{share * 100:.0f} %" if abs(share) >= 0.01 else f"{share * 100:.1f} %"


def weighed_rows(summary: SessionSummary) -> list[RunStats]:
    """One row per variant: combined over its processes (--repeats), the latest run of a
    restarted one (the latest with a steady state, while a newer one has none yet)."""
    rows = summary.variants + [r for r in summary.runs if r.replicate is None] \
        if summary.variants else summary.runs
    latest: dict[tuple, RunStats] = {}
    for r in rows:
        if r.key not in latest or r.median_ms or not latest[r.key].median_ms:
            latest[r.key] = r
    return list(latest.values())


def reference_of(summary: SessionSummary, rows: list[RunStats]) -> RunStats | None:
    home = baseline(summary.axes)
    eager = [r for r in rows if r.mode == "eager" and r.axes == home]
    eager.sort(key=lambda r: (r.precision not in REFERENCE_PRECISIONS, r.precision))
    return eager[0] if eager else None


def reliability(summary: SessionSummary, rows: list[RunStats], ref: RunStats | None = None) -> list[str]:
    """Why a comparison of these rows cannot be trusted, one reason each (none: it can). With
    ``ref``, the rows are weighed against it: a row whose own comparison was with another eager
    run (another precision or axis values) is checked against ``ref`` too."""
    reasons = []
    if summary.busy and not summary.quiet_only:
        reasons.append(summary.busy)
    for r in rows:
        if r.unreliable:
            reasons.append(f"{r.label}: {r.unreliable}")
        if ref is None or r is ref or r.baseline == ref.label:
            continue
        gaps = [load_gap(r, ref)]
        if not (r.processes or ref.processes):  # --repeats: the processes' spread is the interval
            gaps.append(faults_gap(r, ref, summary.pin_malloc))
        reasons += [f"{r.label}: {gap}" for gap in gaps if gap]
    return reasons


def advice(reasons: list[str], pinned: bool | None = None) -> str:
    if any("recompile" in r for r in reasons):
        return "Fix the recompiles (see the notes), then measure again"
    if any("page faults differed" in r for r in reasons):
        if pinned:
            return "Measure again with --repeats 3 or more (the allocator was pinned already)"
        return "Measure again with --pin-malloc (the same allocator thresholds in every run)"
    return "Measure again on a quiet machine, or with --quiet-only"


def _unmeasured(r: RunStats) -> str:
    """Why a run that ended has no steady state, in words."""
    if r.status == "failed":
        return f"failed: {r.error}" if r.error else "failed"
    if r.untimed:  # runner/script/children.py: steps tuimon could not see, not a warm-up
        return f"measured nothing: {r.untimed}"
    if r.status == "not run":
        return "was not run (stopped before it started)"
    if r.busy_dropped:
        return (f"has no steady state left: --quiet-only kept out all {r.busy_dropped:,} of its steps "
                "measured under other processes' load; measure on a quieter machine")
    if r.gap_steps and 2 * r.gap_steps >= r.steps:  # not warm-up: validation passes kept apart
        rest = "" if r.gap_steps >= r.steps else ", the rest within its warm-up"
        return (f"has no steady state: {r.gap_steps:,} of its {r.steps:,} steps held a validation "
                f"pass (model.eval() or another DataLoader's batches), kept apart{rest}")
    return f"has no steady state: it {'was stopped' if r.status == 'stopped' else 'ended'} after " \
           f"{r.steps} step{'s' if r.steps != 1 else ''}, within its warm-up"


def swinging(r: RunStats, tolerance: float) -> bool:
    """The loss reference's own losses swing more over the steps compared than the tolerance, and
    than the gap: the gap says nothing of compile, and no variant is disqualified for it."""
    return (r.loss_ref_spread or 0.0) > max(tolerance, abs(r.loss_gap or 0.0))


def _disqualify(r: RunStats, ref: RunStats, tolerance: float) -> str | None:
    if r.status == "failed":
        return f"failed: {r.error}" if r.error else "failed"
    if r.loss_nonfinite and not ref.loss_nonfinite:
        return f"its loss turned NaN or inf ({r.loss_nonfinite} steps)"
    # Only a script may start from other losses (it seeds itself, or not): a recipe is seeded, and
    # amp's numerics can move a compiled variant's first loss by more than loss_comparable allows.
    unseeded = r.precision == SCRIPT and r.loss_comparable is False
    if r.loss_gap is not None and not unseeded and not swinging(r, tolerance) \
            and abs(r.loss_gap) > tolerance:
        where = "above" if r.loss_gap > 0 else "below"
        return (f"its losses end {pct(abs(r.loss_gap))} of the first loss {where} {r.loss_ref}'s "
                f"(tolerance {pct(tolerance)}, --loss-tolerance)")
    return None


def longer(rows: list[RunStats], runs: list[RunStats]) -> str:
    """The least length that would give each of ``rows`` MIN_STEADY steady steps, in the words of
    what set it ('run at least --steps 90', '--duration 75', or the script's own end). Each
    process keeps its warm-up (its steps less its steady ones); with K processes round 1 runs the
    whole length and the others a K-th of it (tuimon/lengths.py)."""
    by_id = {r.run: r for r in runs}
    need, seconds, own_end = 0, 0.0, False
    for row in rows:
        procs = [by_id[p["run"]] for p in row.processes if p["run"] in by_id] or [row]
        if sum(p.gap_steps for p in procs) * 2 > sum(p.steps for p in procs):
            continue  # most steps held a validation pass: more of them would not help
        k = len(procs)
        kept = sum(p.steps - p.measured for p in procs)  # warm-up, compiles, passes: kept apart
        steps = math.ceil((MIN_STEADY + kept) * k / (2 * k - 1))
        need = max(need, steps)
        full = max(procs, key=lambda p: p.steps)
        if full.length_s is not None and full.steps:
            seconds = max(seconds, full.length_s * steps / full.steps)
        elif full.length_steps is None and full.precision == SCRIPT:
            own_end = True
    if not need:
        return "run longer (--steps or --duration)"
    if seconds:
        return f"run longer: at least --duration {math.ceil(seconds):g} (~{need} steps)"
    if own_end:
        return (f"the script ended on its own before that: run it for ~{need} steps or more "
                "(more epochs or data)")
    return f"run longer: at least --steps {need}"
