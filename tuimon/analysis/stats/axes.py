"""The effect of a ``--set`` axis: each row against the row of the same mode and precision whose
axes are all at their baseline (first) values, e.g. ``default/fp32 · width=512`` against
``default/fp32 · width=256``. Per sample when the two differ in samples per step (a batch-size
axis), so a bigger batch is not read as a slower step."""

from __future__ import annotations

from dataclasses import replace

from tuimon import fixes
from tuimon.analysis.stats.compare import same_round
from tuimon.analysis.stats.noise import Noise, ratio_interval, untold_between
from tuimon.analysis.stats.records import Comparison
from tuimon.analysis.stats.rows import RunStats, per_sample, samples_per_step


def axis_compare(r: RunStats, rows: dict[str, RunStats], axes: dict[str, list[str]],
                 noise: Noise) -> Comparison:
    """``r``'s Comparison with its axis effect. ``axes``: key -> values in order (the first: the
    baseline), for every key a row has."""
    if not r.axes or not r.timing.median_ms:
        return r.compare
    home = {key: (axes.get(key) or [value])[0] for key, value in r.axes.items()}
    if fixes.AXIS in home and any(fixes.AXIS not in b.axes for b in rows.values()):
        home[fixes.AXIS] = fixes.NONE  # a fix added beside runs without the axis (the TUI's t)
    if fixes.plain(home) == fixes.plain(r.axes):
        return r.compare  # it is the baseline of its axes
    same = [b for b in rows.values() if b.mode == r.mode and b.precision == r.precision
            and fixes.plain(b.axes) == fixes.plain(home) and b.timing.median_ms]
    base = same_round(same, r)
    if base is None:
        return r.compare
    by_sample = per_sample([base, r])
    ratio = base.timing.median_ms / r.timing.median_ms
    if by_sample:  # time per sample: step time over samples per step
        ratio *= samples_per_step(r) / samples_per_step(base)
    lo, hi = ratio_interval(base, r, ratio, noise) or (r.compare.axis_speedup_lo, r.compare.axis_speedup_hi)
    return replace(r.compare, axis_baseline=base.label, axis_per_sample=by_sample, axis_speedup=ratio,
                   axis_speedup_lo=lo, axis_speedup_hi=hi, axis_untold=untold_between(base, r, lo, hi, noise))
