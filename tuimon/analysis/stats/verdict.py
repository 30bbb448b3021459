"""The verdict: the answer to "should I compile, and with which mode?" — a pure function of the
summary (``decide``), computed once with it (collect.py). It is a decision, not a sentence: a
``code`` (the answer's shape), the winner, the figures, and the reasons as points;
report/verdict_text.py words it as the one line every surface shows. What is weighed against
what (the reference, candidates, reliability, "faster", the horizon, break-even per start):
docs/measuring.md#the-verdict."""

from __future__ import annotations

from dataclasses import dataclass, field

from tuimon.analysis.stats.candidates import (
    MIN_STEADY,
    disqualify,
    longer,
    reference_of,
    reliability,
    remedy,
    swinging,
    unmeasured,
    weighed_rows,
)
from tuimon.analysis.stats.compare import pays_off
from tuimon.analysis.stats.noise import ASSUMED, Noise, ratio_basis, ratio_interval, untold
from tuimon.analysis.stats.point import Point, point
from tuimon.analysis.stats.rows import RunStats, SessionSummary, per_sample, samples_per_step
from tuimon.analysis.stats.warm import overhead
from tuimon.fmt import fmt_span

# An interval wider than this factor (hi / lo) across 1 holds a large speedup and a large
# slowdown alike: the verdict says it cannot tell, not "stay eager" (0.98×, 95 % CI 0.07–13.14).
WIDE = 2.0

# The answer's shape -> its kind (summary.json's "kind", the strip's colour). Each code is one
# form of the line in report/verdict_text.py, which reads the figures named beside it.
KINDS = {
    "waiting_first": "pending",  # no run yet
    "no_reference": "none",  # no eager run at the axes' baseline
    "waiting_reference": "pending",  # the reference has no steady state yet
    "reference_unmeasured": "none",  # ... and ended without one: ``why``
    "nothing_compiled": "none",  # no candidate left, the compiled ones compiled nothing
    "waiting_steady": "pending",  # ``few`` rows short of ``need`` steady steps, still running
    "too_few": "none",  # ... ended: ``longer`` says how long would do
    "unreliable": "unreliable",  # ``reasons``, ``remedy``
    "cannot_tell": "none",  # ``about``'s interval holds a speedup and a slowdown alike
    "stay": "stay",  # nothing faster beyond noise; ``about``: the closest
    "same": "stay",  # --until-known: every candidate as fast as the reference within ±``margin``
    "stay_horizon": "stay",  # no compile pays off within the horizon: ``about``, ``pays_after_s``
    "stay_horizon_noise": "stay",  # ``about`` would save ``would_save_s``, within noise
    "use": "use",  # the winner, ``payoff``, ``as_fast``
    "use_horizon": "use",  # the least total time over the horizon; ``about``: faster per step
}


@dataclass
class Verdict:
    code: str  # one of KINDS
    kind: str  # use | stay | unreliable | pending (no answer yet) | none (no answer possible)
    reference: str | None = None  # the label of what the user runs today
    winner: str | None = None  # the label of the variant to use (kind "use")
    winner_run: str | None = None
    speedup: float | None = None  # the winner against the reference (per step, or per sample)
    speedup_lo: float | None = None
    speedup_hi: float | None = None
    per_sample: bool = False
    breakeven_s: float | None = None  # the winner's wall time at which its compile has paid off
    breakeven_warm_s: float | None = None  # ... with a warm start, when the session measured one
    start: str | None = None  # the start weighed over the horizon (--start), when not cold
    saving: float | None = None  # the share of time it saves in the long run (1 - 1/speedup)
    horizon: dict | None = None
    horizon_steps: float | None = None  # the horizon in reference steps
    horizon_saving_s: float | None = None  # time saved over the horizon, compile included
    horizon_saving: float | None = None  # ... as a share of the reference's time over it
    reasons: list[Point] = field(default_factory=list)  # why the comparison is unreliable
    remedy: str | None = None  # unreliable: what to do (candidates.remedy)
    disqualified: list[dict] = field(default_factory=list)  # {label, run, why: Point}
    unweighed: list[dict] = field(default_factory=list)  # {label, ref, gap, spread}: losses not weighed
    skipped: list[dict] = field(default_factory=list)  # {label, reason}: not run here (sweep)
    pending: list[str] = field(default_factory=list)  # labels not measured yet
    candidates: list[dict] = field(default_factory=list)  # {label, run, speedup, lo, hi, faster,
    #   overhead_s, total_s (over the horizon), basis (Point: what the interval rests on), untold
    #   (Point: the interval too wide for its figure to mean anything, noise.untold)}
    # The figures its line names, by code (KINDS):
    about: str | None = None  # another variant's label: the closest, or faster per step
    why: Point | None = None  # reference_unmeasured: why it has no steady state
    reference_ms: float | None = None  # nothing_compiled: the reference's median step (ms)
    few: list[dict] = field(default_factory=list)  # {label, measured}: short of ``need``
    need: int = MIN_STEADY
    longer: Point | None = None  # too_few: the least length that would give them enough
    payoff: Point | None = None  # use: when the winner's compile pays off (``when``)
    as_fast: dict | None = None  # use: {label, overhead_s, winner_overhead_s}: a variant as fast
    #   within noise that warms up clearly sooner
    reference_total_s: float | None = None  # over the horizon
    pays_after_s: float | None = None  # ``about``'s break-even wall time (horizon codes)
    would_save_s: float | None = None  # stay_horizon_noise: ``about``'s saving at its estimate
    would_save: float | None = None  # ... as a share of the reference's time over the horizon
    slow_extra_s: float | None = None  # ... and what it would add at the slow end of its interval
    margin: float | None = None  # same: --until-known's margin (0.03: ±3 %)

    def answer(self, code: str) -> None:
        self.code, self.kind = code, KINDS[code]

    def candidate(self, label: str | None) -> dict | None:
        return next((c for c in self.candidates if c["label"] == label), None)


def decide(summary: SessionSummary) -> Verdict:
    rows = weighed_rows(summary)
    ref = reference_of(summary, rows)
    skipped = [dict(s) for s in summary.skipped]
    if ref is None:
        code = "no_reference" if rows else "waiting_first"
        return Verdict(code, KINDS[code], skipped=skipped)
    if not ref.timing.median_ms:
        if ref.status in ("queued", "running"):
            return Verdict("waiting_reference", "pending", reference=ref.label, skipped=skipped)
        return Verdict("reference_unmeasured", "none", reference=ref.label, skipped=skipped,
                       why=unmeasured(ref))
    out = Verdict("stay", "stay", reference=ref.label, skipped=skipped, horizon=summary.horizon)
    qualified = []
    for r in rows:
        if r is ref or r.status == "skipped":
            continue
        if (why := disqualify(r, ref, summary.loss_tolerance)) is not None:
            out.disqualified.append({"label": r.label, "run": r.run, "why": why})
            continue
        if r.loss.loss_gap is not None and swinging(r, summary.loss_tolerance):
            out.unweighed.append({"label": r.label, "ref": r.loss.loss_ref, "gap": r.loss.loss_gap,
                                  "spread": r.loss.loss_ref_spread})
        if r.compile.nothing_compiled:  # its speed is eager's: no answer to "should I compile"
            out.disqualified.append({"label": r.label, "run": r.run,
                                     "why": point("nothing_compiled", why=r.compile.nothing_compiled)})
        elif not r.timing.median_ms:
            if r.status in ("queued", "running"):
                out.pending.append(r.label)
            else:
                out.disqualified.append({"label": r.label, "run": r.run, "why": unmeasured(r)})
        else:
            qualified.append(r)
    uncompiled = [d for d in out.disqualified if d["why"].code == "nothing_compiled"]
    if uncompiled and not qualified and not out.pending:
        out.answer("nothing_compiled")
        out.reference_ms = ref.timing.median_ms
        return out
    if _too_few(out, ref, qualified, summary.runs):
        return out
    out.reasons = reliability(summary, [ref, *qualified], ref)
    out.per_sample = per_sample([ref, *qualified])
    if out.per_sample:  # rows that do not say their samples cannot be weighed per sample
        for r in [r for r in qualified if not samples_per_step(r)]:
            qualified.remove(r)
            out.disqualified.append({"label": r.label, "run": r.run, "why": point("samples_unknown")})
    out.start = summary.start if summary.start != "cold" else None
    _weigh(out, ref, qualified, summary.noise or ASSUMED, summary.pin_malloc)
    margin = (summary.until_known or {}).get("margin")
    if out.code in ("stay", "cannot_tell") and margin and out.candidates and all(
            c["lo"] is not None and c["lo"] >= 1 / (1 + margin) and c["hi"] <= 1 + margin
            for c in out.candidates):
        out.answer("same")  # the interval says more than "not faster": no difference that matters
        out.margin = margin
    return out


def _too_few(out: Verdict, ref: RunStats, qualified: list[RunStats], runs: list[RunStats]) -> bool:
    """Rows with fewer than MIN_STEADY steady steps are not weighed: still running, they are
    pending; ended, set aside with the reason. True (the answer given) when that leaves nothing
    to weigh: the reference, or every candidate, has too few."""
    few = [r for r in qualified if r.timing.measured < MIN_STEADY]
    if ref.timing.measured < MIN_STEADY or (few and len(few) == len(qualified)):
        rows = [r for r in (ref, *few) if r.timing.measured < MIN_STEADY]
        out.few = [{"label": r.label, "measured": r.timing.measured} for r in rows]
        if any(r.status in ("queued", "running") for r in rows):
            out.answer("waiting_steady")
        else:
            out.answer("too_few")
            out.longer = longer(rows, runs)
        return True
    for r in few:
        qualified.remove(r)
        if r.status in ("queued", "running"):
            out.pending.append(r.label)
        else:
            out.disqualified.append({"label": r.label, "run": r.run,
                                     "why": point("too_few", measured=r.timing.measured, need=MIN_STEADY)})
    return False


def _weigh(out: Verdict, ref: RunStats, qualified: list[RunStats], noise: Noise,
           pinned: bool | None) -> None:
    def cost(r: RunStats) -> float:  # ms per step, or per sample
        return r.timing.median_ms / samples_per_step(r) if out.per_sample else r.timing.median_ms

    def up_front(r: RunStats) -> float:  # its warm-up and compile under the start weighed
        return overhead(r, out.start) or 0.0

    found = {}
    for r in qualified:
        ratio = cost(ref) / cost(r)
        lo, hi = ratio_interval(ref, r, ratio, noise) or (None, None)
        basis = ratio_basis(ref, r, noise) if lo is not None else None
        found[r.run] = {"label": r.label, "run": r.run, "speedup": ratio, "lo": lo, "hi": hi,
                        "faster": lo is not None and lo > 1.0, "overhead_s": up_front(r),
                        "total_s": None, "basis": basis, "untold": untold(lo, hi, basis and basis.code)}
    out.candidates = list(found.values())
    faster = [r for r in qualified if found[r.run]["faster"]]
    horizon = out.horizon
    if horizon:
        units = horizon.get("steps")
        if units is None:  # a run that takes this long with the reference today
            left_s = max(0.0, horizon["seconds"] - (ref.timing.overhead_s or 0.0))
            units = left_s * 1000.0 / ref.timing.median_ms
        out.horizon_steps = units
        if out.per_sample:
            units *= samples_per_step(ref)
        total = {r.run: up_front(r) + units * cost(r) / 1000.0 for r in [ref, *qualified]}
        for c in out.candidates:
            c["total_s"] = total[c["run"]]
        out.reference_total_s = total[ref.run]
    if out.reasons:  # the candidates' figures stay in the verdict, for other readers; no winner
        out.answer("unreliable")
        out.remedy = remedy(out.reasons, pinned)
        return
    best = max(faster, key=lambda r: found[r.run]["speedup"], default=None)  # the long run's
    if best is None:
        top = max(qualified, key=lambda r: found[r.run]["speedup"], default=None)
        c = found[top.run] if top is not None else None
        out.about = top.label if top is not None else None
        if c is not None and c["lo"] is not None and c["hi"] / c["lo"] > WIDE:
            out.answer("cannot_tell")  # "stay eager" would be a guess: the interval holds both answers
        return
    winner = best
    if horizon:
        winner = min([ref, *faster], key=lambda r: total[r.run])
    if winner is ref:  # the horizon is too short for any compile to pay off
        out.answer("stay_horizon")
        out.about = best.label
        out.pays_after_s = pays_off(cost(ref), up_front(ref), cost(best), up_front(best))[1]
        return
    c = found[winner.run]
    if horizon:  # its saving over the horizon must hold at the slow end of its interval too
        slow = up_front(winner) + units * cost(ref) / c["lo"] / 1000.0
        if slow >= total[ref.run]:
            out.answer("stay_horizon_noise")
            out.about = winner.label
            out.would_save_s = total[ref.run] - total[winner.run]
            out.would_save = out.would_save_s / total[ref.run]
            out.slow_extra_s = slow - total[ref.run]
            return
    out.answer("use_horizon" if horizon else "use")
    out.winner, out.winner_run = winner.label, winner.run
    out.speedup, out.speedup_lo, out.speedup_hi = c["speedup"], c["lo"], c["hi"]
    out.saving = 1.0 - 1.0 / c["speedup"]
    # The cold start's warm-up (carried from the session that measured it, when this one started warm)
    n, out.breakeven_s, _ = pays_off(cost(ref), ref.timing.overhead_s, cost(winner), overhead(winner, None))
    out.payoff = point("no_compile" if not winner.compiled else "at_once" if n == 0 else "after",
                       at_once=n == 0)
    warm = winner.warm.starts.get("warm") if "cold" in winner.warm.starts else None
    if warm and warm.get("overhead_s") is not None:  # both starts measured: both said
        m, out.breakeven_warm_s, _ = pays_off(cost(ref), ref.timing.overhead_s, cost(winner),
                                              warm["overhead_s"])
        out.payoff = point("both_at_once" if n == 0 else "both", at_once=n == 0, warm_at_once=m == 0)
    if not horizon:
        out.as_fast = _as_fast(winner, faster, found)
        return
    out.horizon_saving_s = total[ref.run] - total[winner.run]
    out.horizon_saving = out.horizon_saving_s / total[ref.run] if total[ref.run] else None
    if best is not winner:
        out.about = best.label
        out.pays_after_s = pays_off(cost(ref), up_front(ref), cost(best), up_front(best))[1]


def _as_fast(winner: RunStats, faster: list[RunStats], found: dict) -> dict | None:
    """A variant as fast within noise that costs clearly less up front (a tenth less, and not
    the same figure once printed) is worth naming, with both warm-ups."""
    w = found[winner.run]
    mine = winner.timing.overhead_s or 0.0
    alike = [r for r in faster if r is not winner and found[r.run]["hi"] is not None
             and w["lo"] is not None and found[r.run]["hi"] >= w["lo"]
             and (r.timing.overhead_s
                  or 0.0) < 0.9 * mine and fmt_span(r.timing.overhead_s) != fmt_span(mine)]
    if not alike:
        return None
    r = min(alike, key=lambda r: r.timing.overhead_s or 0.0)
    return {"label": r.label, "overhead_s": r.timing.overhead_s,
            "winner_overhead_s": winner.timing.overhead_s}
