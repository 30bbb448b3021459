"""The verdict: one line, beginning ``Verdict:``, that answers "should I compile, and with which
mode?" — a pure function of the summary (``decide``), computed once with it (collect.py) and
shown as it is by summary.md, the headless output and the TUI's strip.

What is weighed against what (docs/measuring.md#the-verdict):
- the *reference* is what the user runs today: eager, fp32 (a script: its own precision), at
  every axis's baseline (first) value; every other variant is compared with it, per step, or per
  sample when the variants' steps hold different numbers of samples (a batch-size axis);
- a variant is a candidate when it ran to a steady state of MIN_STEADY steps or more (fewer:
  "not enough steady steps", no winner named), its losses agree with its loss
  reference (stats/agreement.py) within the tolerance, and did not fail; a failed, diverged or
  loss-mismatched one is disqualified with the reason, one skipped by ``tuimon sweep`` is listed;
  a compiled variant that compiled nothing (stats/compiles.py) is no candidate either: it is
  named so, and when no candidate is left the verdict says "nothing was compiled";
- when a candidate or the reference is unreliable (it recompiled in steady state, other
  processes' load or its page faults differed from its baseline's or the reference's) or the
  machine was busy throughout (without --quiet-only), the verdict says so instead of naming a
  winner (``reliability``);
- "faster" means beyond noise: the lower end of the 95 % interval of its ratio to the
  reference above 1. Without a horizon the fastest such variant per step wins (the long run);
  with one (``{"steps": N}`` reference steps, or ``{"seconds": S}``: a training run that takes
  S with the reference today) the least total time over it, warm-up and compile included: the
  compile of the start the user will have (``start``, --start: cold by default, or warm from a
  carried cache, when the session measured one);
- a compile's break-even is said for each start the session measured ("pays off after 6.0 min
  cold, 40.0 s warm").
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tuimon.analysis.stats.candidates import (
    MIN_STEADY,
    _disqualify,
    _unmeasured,
    advice,
    longer,
    pct,
    reference_of,
    reliability,
    swinging,
    weighed_rows,
)
from tuimon.analysis.stats.compare import pays_off
from tuimon.analysis.stats.noise import ASSUMED, Noise, ratio_basis, ratio_interval
from tuimon.analysis.stats.rows import RunStats, SessionSummary, per_sample, samples_per_step
from tuimon.analysis.stats.warm import overhead

# An interval wider than this factor (hi / lo) across 1 holds a large speedup and a large
# slowdown alike: the verdict says it cannot tell, not "stay eager" (0.98×, 95 % CI 0.07–13.14).
WIDE = 2.0


@dataclass
class Verdict:
    line: str  # "Verdict: ..." — what every view shows
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
    reasons: list[str] = field(default_factory=list)  # why the comparison is unreliable
    disqualified: list[dict] = field(default_factory=list)  # {label, run, reason}
    unweighed: list[dict] = field(default_factory=list)  # {label, ref, gap, spread}: losses not weighed
    skipped: list[dict] = field(default_factory=list)  # {label, reason}: not run here (sweep)
    pending: list[str] = field(default_factory=list)  # labels not measured yet
    candidates: list[dict] = field(default_factory=list)  # {label, run, speedup, lo, hi, faster,
    #   overhead_s, total_s (over the horizon)}


def fmt_span(s: float | None) -> str:
    """A length of time that reads right from seconds to days: 45.3 s, 6.1 min, 38 min, 2 h 5 min."""
    if s is None:
        return "–"
    if s < 120:
        return f"{s:.1f} s"
    if s < 3600:
        return f"{s / 60:.1f} min" if s < 600 else f"{s / 60:.0f} min"
    hours, minutes = divmod(round(s / 60), 60)
    return f"{hours} h" if minutes == 0 else f"{hours} h {minutes} min"


def horizon_text(horizon: dict) -> str:
    if "steps" in horizon:
        return f"{int(horizon['steps']):,} steps"
    seconds = horizon["seconds"]
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):  # as given: 2 h, 90 min, 1 d
        if seconds >= size and seconds % size == 0:
            return f"{seconds / size:.0f} {unit}"
    return fmt_span(seconds)


def decide(summary: SessionSummary) -> Verdict:
    rows = weighed_rows(summary)
    ref = reference_of(summary, rows)
    skipped = [dict(s) for s in summary.skipped]
    if ref is None:
        line = ("Verdict: no answer: no eager run at the axes' baseline to compare with (add eager "
                "to --modes)" if rows else "Verdict: waiting for the first run")
        return Verdict(line, "none" if rows else "pending", skipped=skipped)
    if not ref.median_ms:
        if ref.status in ("queued", "running"):
            return Verdict(f"Verdict: waiting for {ref.label} to reach its steady state", "pending",
                           reference=ref.label, skipped=skipped)
        return Verdict(f"Verdict: no answer: {ref.label}, the reference, {_unmeasured(ref)}", "none",
                       reference=ref.label, skipped=skipped)
    out = Verdict("", "stay", reference=ref.label, skipped=skipped, horizon=summary.horizon)
    qualified = []
    for r in rows:
        if r is ref or r.status == "skipped":
            continue
        if (why := _disqualify(r, ref, summary.loss_tolerance)) is not None:
            out.disqualified.append({"label": r.label, "run": r.run, "reason": why})
            continue
        if r.loss_gap is not None and swinging(r, summary.loss_tolerance):
            out.unweighed.append({"label": r.label, "ref": r.loss_ref, "gap": r.loss_gap,
                                  "spread": r.loss_ref_spread})
        if r.nothing_compiled:  # its speed is eager's: no answer to "should I compile"
            out.disqualified.append({"label": r.label, "run": r.run, "uncompiled": r.nothing_compiled,
                                     "reason": f"nothing was compiled — {r.nothing_compiled}"})
        elif not r.median_ms:
            if r.status in ("queued", "running"):
                out.pending.append(r.label)
            else:
                out.disqualified.append({"label": r.label, "run": r.run, "reason": _unmeasured(r)})
        else:
            qualified.append(r)
    uncompiled = [d for d in out.disqualified if d.get("uncompiled")]
    if uncompiled and not qualified and not out.pending:
        out.kind = "none"
        names = ", ".join(d["label"] for d in uncompiled)
        out.line = (f"Verdict: no answer: nothing was compiled in {names} — "
                    f"{uncompiled[0]['uncompiled'].rstrip('.')}.")
        return out
    if _too_few(out, ref, qualified, summary.runs):
        return out
    out.reasons = reliability(summary, [ref, *qualified], ref)
    out.per_sample = per_sample([ref, *qualified])
    if out.per_sample:  # rows that do not say their samples cannot be weighed per sample
        for r in [r for r in qualified if not samples_per_step(r)]:
            qualified.remove(r)
            out.disqualified.append({"label": r.label, "run": r.run,
                                     "reason": "its samples per step are unknown (steps differ)"})
    out.start = summary.start if summary.start != "cold" else None
    _weigh(out, ref, qualified, summary.noise or ASSUMED, summary.pin_malloc)
    if out.pending:
        out.line += f" (so far: {len(out.pending)} variant(s) not in steady state yet)"
    return out


def _too_few(out: Verdict, ref: RunStats, qualified: list[RunStats], runs: list[RunStats]) -> bool:
    """Rows with fewer than MIN_STEADY steady steps are not weighed: still running, they are
    pending; ended, set aside with the reason. True (the line said) when that leaves nothing
    to weigh: the reference, or every candidate, has too few."""
    few = [r for r in qualified if r.measured < MIN_STEADY]
    if ref.measured < MIN_STEADY or (few and len(few) == len(qualified)):
        rows = [r for r in (ref, *few) if r.measured < MIN_STEADY]
        counts = " and ".join(f"{r.label} {r.measured}" for r in rows)
        need = f"{MIN_STEADY} each are needed" if len(rows) > 1 else f"{MIN_STEADY} are needed"
        if any(r.status in ("queued", "running") for r in rows):
            out.kind = "pending"
            out.line = f"Verdict: waiting for more steady steps ({counts}; {need})"
        else:
            out.kind = "none"
            out.line = (f"Verdict: no answer: not enough steady steps ({counts}; {need}): "
                        f"{longer(rows, runs)}")
        return True
    for r in few:
        qualified.remove(r)
        if r.status in ("queued", "running"):
            out.pending.append(r.label)
        else:
            out.disqualified.append({"label": r.label, "run": r.run, "reason": (
                f"only {r.measured} steady steps ({MIN_STEADY} are needed to weigh it): run longer")})
    return False


def _weigh(out: Verdict, ref: RunStats, qualified: list[RunStats], noise: Noise,
           pinned: bool | None) -> None:
    def cost(r: RunStats) -> float:  # ms per step, or per sample
        return r.median_ms / samples_per_step(r) if out.per_sample else r.median_ms

    def up_front(r: RunStats) -> float:  # its warm-up and compile under the start weighed
        return overhead(r, out.start) or 0.0

    unit = " per sample" if out.per_sample else ""
    found = {}
    for r in qualified:
        ratio = cost(ref) / cost(r)
        lo, hi = ratio_interval(ref, r, ratio, noise) or (None, None)
        found[r.run] = {"label": r.label, "run": r.run, "speedup": ratio, "lo": lo, "hi": hi,
                        "faster": lo is not None and lo > 1.0, "overhead_s": up_front(r),
                        "total_s": None, "basis": ratio_basis(ref, r, noise) if lo is not None else None}
    out.candidates = list(found.values())
    faster = [r for r in qualified if found[r.run]["faster"]]
    horizon = out.horizon
    if horizon:
        units = horizon.get("steps")
        if units is None:  # a run that takes this long with the reference today
            units = max(0.0, horizon["seconds"] - (ref.overhead_s or 0.0)) * 1000.0 / ref.median_ms
        out.horizon_steps = units
        if out.per_sample:
            units *= samples_per_step(ref)
        total = {r.run: up_front(r) + units * cost(r) / 1000.0 for r in [ref, *qualified]}
        for c in out.candidates:
            c["total_s"] = total[c["run"]]
    if out.reasons:  # the candidates' figures stay in the verdict, for other readers; no winner
        more = f" (and {len(out.reasons) - 1} more, in the notes)" if len(out.reasons) > 1 else ""
        out.kind = "unreliable"
        out.line = (f"Verdict: unreliable, no winner named — {out.reasons[0]}{more}. "
                    f"{advice(out.reasons, pinned)}.")
        return
    best = max(faster, key=lambda r: found[r.run]["speedup"], default=None)  # the long run's
    if best is None:
        top = max(qualified, key=lambda r: found[r.run]["speedup"], default=None)
        c = found[top.run] if top is not None else None
        if c is not None and c["lo"] is not None and c["hi"] / c["lo"] > WIDE:
            out.kind = "none"  # "stay eager" would be a guess: the interval holds both answers
            out.line = (f"Verdict: cannot tell — {top.label} runs at {_ratio(c, ref, unit)}, an interval "
                        f"too wide to tell a speedup from a slowdown; it rests on {c['basis']}. "
                        "Measure again on a quiet machine, or longer (--steps, --repeats).")
            return
        out.line = "Verdict: stay eager: no variant is faster beyond noise"
        if top is not None:
            out.line += f" — the closest, {top.label}, runs at {_ratio(found[top.run], ref, unit)}"
        out.line += "."
        return
    winner = best
    if horizon:
        winner = min([ref, *faster], key=lambda r: total[r.run])
    if winner is ref:  # the horizon is too short for any compile to pay off
        n, t, _ = pays_off(cost(ref), up_front(ref), cost(best), up_front(best))
        out.line = (f"Verdict: stay eager for {horizon_text(horizon)}{_started(out)}: no compile pays "
                    "off that soon — "
                    f"{best.label} is {_ratio(found[best.run], ref, unit)} but pays off only after "
                    f"{fmt_span(t)}; over {horizon_text(horizon)} it would take "
                    f"{fmt_span(total[best.run])} instead of {fmt_span(total[ref.run])}.")
        return
    c = found[winner.run]
    if horizon:  # its saving over the horizon must hold at the slow end of its interval too
        slow = up_front(winner) + units * cost(ref) / c["lo"] / 1000.0
        if slow >= total[ref.run]:
            gain = total[ref.run] - total[winner.run]
            out.line = (f"Verdict: stay eager for {horizon_text(horizon)}: {winner.label} would save "
                        f"{fmt_span(gain)} ({pct(gain / total[ref.run])}), compile included, but "
                        f"that is within noise — at the slow end of its 95 % interval "
                        f"({c['lo']:.2f}× {ref.label}) it would take {fmt_span(slow - total[ref.run])} "
                        "longer.")
            return
    out.kind, out.winner, out.winner_run = "use", winner.label, winner.run
    out.speedup, out.speedup_lo, out.speedup_hi = c["speedup"], c["lo"], c["hi"]
    out.saving = 1.0 - 1.0 / c["speedup"]
    n, out.breakeven_s, _ = pays_off(cost(ref), ref.overhead_s, cost(winner), winner.overhead_s)
    pay = ("no compile to pay off" if not winner.compiled else "compile pays off at once" if n == 0
           else f"compile pays off after {fmt_span(out.breakeven_s)}")
    warm = winner.starts.get("warm") if "cold" in winner.starts else None
    if warm and warm.get("overhead_s") is not None:  # both starts measured: both said
        m, out.breakeven_warm_s, _ = pays_off(cost(ref), ref.overhead_s, cost(winner), warm["overhead_s"])
        pay = ("compile pays off at once, cold or warm" if n == 0 else
               f"compile pays off after {fmt_span(out.breakeven_s)} cold, "
               + ("at once warm" if m == 0 else f"{fmt_span(out.breakeven_warm_s)} warm"))
    if not horizon:
        later = "from the start it saves" if n == 0 else "a longer training run saves up to"
        out.line = (f"Verdict: use {winner.label} — {_ratio(c, ref, unit)}, {pay}; "
                    f"{later} {pct(out.saving)} of its time{_as_fast(winner, faster, found)}.")
        return
    out.horizon_saving_s = total[ref.run] - total[winner.run]
    out.horizon_saving = out.horizon_saving_s / total[ref.run] if total[ref.run] else None
    out.line = (f"Verdict: use {winner.label} for {horizon_text(horizon)} of training{_started(out)} — "
                f"{fmt_span(total[winner.run])} instead of {fmt_span(total[ref.run])} with "
                f"{ref.label}, compile included: {fmt_span(out.horizon_saving_s)} "
                f"({pct(out.horizon_saving)}) less; {_ratio(c, ref, unit)}, {pay}.")
    if best is not winner:
        n, t, _ = pays_off(cost(ref), up_front(ref), cost(best), up_front(best))
        out.line = (out.line[:-1] + f"; {best.label} is faster per step "
                    f"({found[best.run]['speedup']:.2f}×) but pays off only after {fmt_span(t)}.")


def _started(out: Verdict) -> str:
    return f", starting {out.start}" if out.start else ""


def _ratio(c: dict, ref: RunStats, unit: str) -> str:
    ci = f" (95 % CI {c['lo']:.2f}–{c['hi']:.2f})" if c["lo"] is not None else " (no interval: too few steps)"
    return f"{c['speedup']:.2f}× {ref.label}{unit}{ci}"


def _as_fast(winner: RunStats, faster: list[RunStats], found: dict) -> str:
    """A variant as fast within noise that costs clearly less up front (a tenth less, and
    not the same figure once printed) is worth naming."""
    w = found[winner.run]
    mine = winner.overhead_s or 0.0
    alike = [r for r in faster if r is not winner and found[r.run]["hi"] is not None
             and w["lo"] is not None and found[r.run]["hi"] >= w["lo"]
             and (r.overhead_s or 0.0) < 0.9 * mine and fmt_span(r.overhead_s) != fmt_span(mine)]
    if not alike:
        return ""
    r = min(alike, key=lambda r: r.overhead_s or 0.0)
    return (f" ({r.label}, {found[r.run]['speedup']:.2f}×, is as fast within noise and warms up in "
            f"{fmt_span(r.overhead_s)} instead of {fmt_span(winner.overhead_s)})")

