"""Whether a variant trains like its *loss reference* (the eager run at the same axis values in
fp32, else in its own precision): compile should not change what is learnt, so a variant whose
losses end far away, or turn NaN, is disqualified (verdict.py). The gap is over the last quarter
of the steps both ran, as a share of the reference's first loss, so a loss that falls to ~0 in
both stays ~0 apart and one step's noise is averaged out."""

from __future__ import annotations

import statistics
from dataclasses import replace

from tuimon.analysis.stats.compare import same_round
from tuimon.analysis.stats.records import Losses
from tuimon.analysis.stats.rows import RunStats

REFERENCE_PRECISIONS = ("fp32", "script")


def loss_gap(r: RunStats, rows: dict[str, RunStats], losses: dict[str, dict[int, float]]) -> Losses:
    """``r``'s Losses with its gap to its loss reference (``loss_ref``, ``loss_gap``,
    ``loss_ref_spread``)."""
    eager = [b for b in rows.values() if b.mode == "eager" and b.axes == r.axes and losses.get(b.run)]
    ref = [b for b in eager if b.precision in REFERENCE_PRECISIONS] or [
        b for b in eager if b.precision == r.precision]
    base = same_round(ref, r)
    if base is None or base is r:
        return r.loss
    mine, theirs = losses.get(r.run) or {}, losses[base.run]
    common = sorted(i for i in mine if i in theirs)
    if len(common) < 2 or theirs[common[0]] == 0:
        return replace(r.loss, loss_ref=base.label)
    tail = common[len(common) - max(1, len(common) // 4):]
    scale = abs(theirs[common[0]])
    gap = statistics.fmean(mine[i] for i in tail) - statistics.fmean(theirs[i] for i in tail)
    # How far the reference's own losses swing over that quarter: a gap no wider than its own
    # swings says nothing of compile (imagenet at lr 0.1 on random data: eager's loss went from
    # 0.5 to 52 while a compiled variant was disqualified for ending 89 % lower).
    ends = [theirs[i] for i in tail]
    return replace(r.loss, loss_ref=base.label,
                   loss_gap=gap / scale,  # > 0: the variant's losses end higher
                   loss_ref_spread=(max(ends) - min(ends)) / scale)
