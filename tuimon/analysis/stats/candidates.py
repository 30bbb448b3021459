"""Who the verdict weighs (stats/verdict.py): the reference (what the user runs today), each
variant as a candidate or not — failed, diverged, losses off its reference's, too few steady
steps — with the reason, whether a comparison can be trusted at all (``reliability``), what to
do when it cannot (``remedy``), and the least run length that would give an answer
(``longer``). Every reason is a Point (a code and its figures); report/verdict_text.py words it."""

from __future__ import annotations

import math

from tuimon import fixes
from tuimon.analysis.stats.faults import faults_gap
from tuimon.analysis.stats.load import load_gap
from tuimon.analysis.stats.point import Point, point
from tuimon.analysis.stats.rows import RunStats, SessionSummary
from tuimon.axes import baseline
from tuimon.variants import SCRIPT

REFERENCE_PRECISIONS = ("fp32", "script")
# Steady steps a variant needs before it is weighed: below four batches of five, MSER-5 cannot
# tell warm-up from steady state (steady_state.mser5 looks for none), and the median's interval
# is little more than the range of the few steps there are (all from a turn or two).
MIN_STEADY = 20


def weighed_rows(summary: SessionSummary) -> list[RunStats]:
    """One row per variant: combined over its processes (--repeats), the latest run of a
    restarted one (the latest with a steady state, while a newer one has none yet)."""
    rows = summary.variants + [r for r in summary.runs if r.replicate is None] \
        if summary.variants else summary.runs
    latest: dict[tuple, RunStats] = {}
    for r in rows:
        if r.key not in latest or r.timing.median_ms or not latest[r.key].timing.median_ms:
            latest[r.key] = r
    return list(latest.values())


def reference_of(summary: SessionSummary, rows: list[RunStats]) -> RunStats | None:
    home = baseline(summary.axes)
    if fixes.AXIS in home and any(fixes.AXIS not in r.axes for r in rows):
        home[fixes.AXIS] = fixes.NONE  # a fix added beside runs without the axis (the TUI's t)
    eager = [r for r in rows if r.mode == "eager" and fixes.plain(r.axes) == fixes.plain(home)]
    eager.sort(key=lambda r: (r.precision not in REFERENCE_PRECISIONS, r.precision))
    return eager[0] if eager else None


def reliability(summary: SessionSummary, rows: list[RunStats], ref: RunStats | None = None) -> list[Point]:
    """Why a comparison of these rows cannot be trusted, one reason each (none: it can): the
    session's ``busy`` point, and ``row`` points (a row's ``label`` and its ``doubts``). With
    ``ref``, the rows are weighed against it: a row whose own comparison was with another eager
    run (another precision or axis values) is checked against ``ref`` too."""
    reasons = []
    if summary.busy and not summary.quiet_only:
        reasons.append(summary.busy)
    for r in rows:
        if r.doubts:
            reasons.append(point("row", label=r.label, doubts=list(r.doubts)))
        if ref is None or r is ref or r.compare.baseline == ref.label:
            continue
        gaps = [load_gap(r, ref)]
        if not (r.processes or ref.processes):  # --repeats: the processes' spread is the interval
            gaps.append(faults_gap(r, ref, summary.pin_malloc))
        reasons += [point("row", label=r.label, doubts=[gap]) for gap in gaps if gap]
    return reasons


def doubt_codes(reasons: list[Point]) -> set[str]:
    """The codes of every doubt under the reasons (a row's), and the session's own."""
    return {d.code for x in reasons for d in x.get("doubts", [x])}


def remedy(reasons: list[Point], pinned: bool | None = None) -> str:
    """What to do when the comparison cannot be trusted: ``reading`` (tuimon's reading of the
    loop does not hold: analysis/stats/anatomy.py), ``fix_recompiles``, ``pin_malloc`` (page
    faults differed), ``repeats`` (they differed with the allocator pinned already), or
    ``quiet`` (other processes' load)."""
    found = doubt_codes(reasons)
    if found & {"steps_differ", "trainings"}:
        return "reading"
    if "recompiled" in found:
        return "fix_recompiles"
    if "faults_differ" in found:
        return "repeats" if pinned else "pin_malloc"
    return "quiet"


def unmeasured(r: RunStats) -> Point:
    """Why a run that ended has no steady state: ``failed`` (its error), ``untimed`` (steps tuimon
    could not see: the runner's line), ``busy_dropped`` (--quiet-only kept out every step),
    ``gaps`` (most of its steps held a validation pass; ``all``: every one), ``warmup`` (it
    ended, or was ``stopped``, within its warm-up)."""
    if r.status == "failed":
        return point("failed", error=r.failure.error)
    if r.timing.untimed:  # runner/script/children.py: steps tuimon could not see, not a warm-up
        return point("untimed", text=r.timing.untimed)
    if r.load.busy_dropped:
        return point("busy_dropped", steps=r.load.busy_dropped)
    # not warm-up: validation passes kept apart
    if r.timing.gap_steps and 2 * r.timing.gap_steps >= r.timing.steps:
        return point("gaps", gaps=r.timing.gap_steps, steps=r.timing.steps,
                     all=r.timing.gap_steps >= r.timing.steps)
    return point("warmup", steps=r.timing.steps, stopped=r.status == "stopped")


def swinging(r: RunStats, tolerance: float) -> bool:
    """The loss reference's own losses swing more over the steps compared than the tolerance, and
    than the gap: the gap says nothing of compile, and no variant is disqualified for it."""
    return (r.loss.loss_ref_spread or 0.0) > max(tolerance, abs(r.loss.loss_gap or 0.0))


def disqualify(r: RunStats, ref: RunStats, tolerance: float) -> Point | None:
    """``failed``, ``nonfinite`` (its loss turned NaN or inf where the reference's did not), or
    ``loss_gap`` (its losses end further from its loss reference's than the tolerance)."""
    if r.status == "failed":
        return point("failed", error=r.failure.error)
    if r.loss.loss_nonfinite and not ref.loss.loss_nonfinite:
        return point("nonfinite", steps=r.loss.loss_nonfinite)
    # Only a script may start from other losses (it seeds itself, or not): a recipe is seeded, and
    # amp's numerics can move a compiled variant's first loss by more than loss_comparable allows.
    unseeded = r.precision == SCRIPT and r.loss.loss_comparable is False
    if r.loss.loss_gap is not None and not unseeded and not swinging(r, tolerance) \
            and abs(r.loss.loss_gap) > tolerance:
        return point("loss_gap", gap=r.loss.loss_gap, ref=r.loss.loss_ref, tolerance=tolerance)
    return None


def longer(rows: list[RunStats], runs: list[RunStats]) -> Point:
    """The least length that would give each of ``rows`` MIN_STEADY steady steps, by what set it:
    ``duration`` (seconds, ~steps), ``own_end`` (the script ended on its own: ~steps), ``steps``,
    or ``any`` (no length would tell: most steps held a validation pass). Each process keeps its
    warm-up (its steps less its steady ones); with K processes round 1 runs the whole length
    and the others a K-th of it (tuimon/lengths.py)."""
    by_id = {r.run: r for r in runs}
    need, seconds, own_end = 0, 0.0, False
    for row in rows:
        procs = [by_id[p["run"]] for p in row.processes if p["run"] in by_id] or [row]
        if sum(p.timing.gap_steps for p in procs) * 2 > sum(p.timing.steps for p in procs):
            continue  # most steps held a validation pass: more of them would not help
        k = len(procs)
        kept = sum(p.timing.steps - p.timing.measured for p in procs)  # warm-up, compiles, passes: kept apart
        steps = math.ceil((MIN_STEADY + kept) * k / (2 * k - 1))
        need = max(need, steps)
        full = max(procs, key=lambda p: p.timing.steps)
        if full.timing.length_s is not None and full.timing.steps:
            seconds = max(seconds, full.timing.length_s * steps / full.timing.steps)
        elif full.timing.length_steps is None and full.precision == SCRIPT:
            own_end = True
    if not need:
        return point("any")
    if seconds:
        return point("duration", seconds=math.ceil(seconds), steps=need)
    if own_end:
        return point("own_end", steps=need)
    return point("steps", steps=need)
