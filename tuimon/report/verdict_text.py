"""The verdict in words: the one line (``Verdict: ...``) summary.md, summary.json, the headless
output and the TUI's strip show, the reasons a variant is no candidate, and the verdict as
summary.json keeps it. analysis/stats/verdict.py decides (a code, the winner, the figures, the
reasons as points); every sentence of the answer is here, one form a code."""

from __future__ import annotations

from dataclasses import asdict

from tuimon.analysis import Point, Verdict
from tuimon.fmt import fmt_ms, fmt_pct, fmt_span
from tuimon.report import known_text
from tuimon.report.compile_text import nothing_text
from tuimon.report.document import VERDICT, Line, Section
from tuimon.report.trust_text import reason_text
from tuimon.report.untold_text import untold_text, untold_why

REMEDY = {  # what to do when the comparison cannot be trusted (stats/candidates.py remedy)
    "reading": ("Run one training, one model, whose step is one optimizer step() (--steps within "
                "the first training; \"How tuimon read the loop\" says what it saw)"),
    "fix_recompiles": "Fix the recompiles (see the notes), then measure again",
    "repeats": "Measure again with --repeats 3 or more (the allocator was pinned already)",
    "pin_malloc": "Measure again with --pin-malloc (the same allocator thresholds in every run)",
    "quiet": "Measure again on a quiet machine, or with --quiet-only",
}
# The answers that weighed the candidates: the variants still running are counted after them.
WEIGHED = ("unreliable", "cannot_tell", "stay", "same", "stay_horizon", "stay_horizon_noise", "use",
           "use_horizon")


def horizon_text(horizon: dict) -> str:
    if "steps" in horizon:
        return f"{int(horizon['steps']):,} steps"
    seconds = horizon["seconds"]
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):  # as given: 2 h, 90 min, 1 d
        if seconds >= size and seconds % size == 0:
            return f"{seconds / size:.0f} {unit}"
    return fmt_span(seconds)


def unmeasured_text(why: Point) -> str:
    """Why a run that ended has no steady state (stats/candidates.py unmeasured)."""
    f = why.figures
    if why.code == "failed":
        return f"failed: {f['error']}" if f.get("error") else "failed"
    if why.code == "untimed":
        return f"measured nothing: {f['text']}"
    if why.code == "busy_dropped":
        return (f"has no steady state left: --quiet-only kept out all {f['steps']:,} of its steps "
                "measured under other processes' load; measure on a quieter machine")
    if why.code == "gaps":
        rest = "" if f["all"] else ", the rest within its warm-up"
        return (f"has no steady state: {f['gaps']:,} of its {f['steps']:,} steps held a validation "
                f"pass (model.eval() or another DataLoader's batches), kept apart{rest}")
    steps = f["steps"]
    return (f"has no steady state: it {'was stopped' if f['stopped'] else 'ended'} after "
            f"{steps} step{'s' if steps != 1 else ''}, within its warm-up")


def why_not_text(why: Point) -> str:
    """Why a variant is no candidate (the verdict's ``disqualified``)."""
    f = why.figures
    if why.code == "nonfinite":
        return f"its loss turned NaN or inf ({f['steps']} steps)"
    if why.code == "loss_gap":
        where = "above" if f["gap"] > 0 else "below"
        return (f"its losses end {fmt_pct(abs(f['gap']))} of the first loss {where} {f['ref']}'s "
                f"(tolerance {fmt_pct(f['tolerance'])}, --loss-tolerance)")
    if why.code == "nothing_compiled":
        return f"nothing was compiled — {nothing_text(f['why'])}"
    if why.code == "samples_unknown":
        return "its samples per step are unknown (steps differ)"
    if why.code == "too_few":
        return f"only {f['measured']} steady steps ({f['need']} are needed to weigh it): run longer"
    return unmeasured_text(why)


def longer_text(p: Point) -> str:
    """The least length that would give an answer (stats/candidates.py longer)."""
    if p.code == "duration":
        return f"run longer: at least --duration {p.get('seconds'):g} (~{p.get('steps')} steps)"
    if p.code == "own_end":
        return (f"the script ended on its own before that: run it for ~{p.get('steps')} steps or more "
                "(more epochs or data)")
    if p.code == "steps":
        return f"run longer: at least --steps {p.get('steps')}"
    return "run longer (--steps or --duration)"


def basis_text(p: Point | None) -> str | None:
    """What a speedup's interval rests on (stats/noise.py ratio_basis)."""
    if p is None:
        return None
    return {
        "own_noise_rounds": ("the processes' own step noise (their steps spread more than their rounds "
                             "differ)"),
        "paired": f"the spread within a round (±{p.get('pct', 0.0):.1f} %), each round's processes paired",
        "assumed": f"an assumed ±{p.get('pct', 0.0):.0f} % between processes (one process a variant)",
        "own_noise": "the processes' own step noise (their steps spread more than the processes do)",
        "unpaired": f"the spread between processes (±{p.get('pct', 0.0):.1f} %), unpaired",
    }[p.code]


def _ratio(v: Verdict, label: str) -> str:
    c = v.candidate(label)
    unit = " per sample" if v.per_sample else ""
    if c.get("untold") is not None:  # no figure: its interval holds every answer
        return f"{untold_text(c['untold'])} against {v.reference}{unit}"
    ci = f" (95 % CI {c['lo']:.2f}–{c['hi']:.2f})" if c["lo"] is not None else " (no interval: too few steps)"
    return f"{c['speedup']:.2f}× {v.reference}{unit}{ci}"


def _runs(v: Verdict, label: str) -> str:
    """'runs at 0.98× eager/fp32 (95 % CI ...)', or 'is slower beyond noise, by how much cannot
    tell (...) against eager/fp32'."""
    return ("is " if v.candidate(label).get("untold") is not None else "runs at ") + _ratio(v, label)


def _pay(v: Verdict) -> str:
    p = v.payoff
    if p.code == "no_compile":
        return "no compile to pay off"
    if p.code == "at_once":
        return "compile pays off at once"
    if p.code == "after":
        return f"compile pays off after {fmt_span(v.breakeven_s)}"
    if p.code == "both_at_once":
        return "compile pays off at once, cold or warm"
    warm = "at once warm" if p.get("warm_at_once") else f"{fmt_span(v.breakeven_warm_s)} warm"
    return f"compile pays off after {fmt_span(v.breakeven_s)} cold, {warm}"


def _started(v: Verdict) -> str:
    return f", starting {v.start}" if v.start else ""


def _few(v: Verdict) -> tuple[str, str]:
    counts = " and ".join(f"{r['label']} {r['measured']}" for r in v.few)
    need = f"{v.need} each are needed" if len(v.few) > 1 else f"{v.need} are needed"
    return counts, need


def _as_fast(v: Verdict) -> str:
    a = v.as_fast
    if not a:
        return ""
    return (f" ({a['label']}, {v.candidate(a['label'])['speedup']:.2f}×, is as fast within noise and "
            f"warms up in {fmt_span(a['overhead_s'])} instead of {fmt_span(a['winner_overhead_s'])})")


def line(v: Verdict) -> str:
    """The verdict's one line."""
    text = _line(v)
    if v.pending and v.code in WEIGHED:
        text += f" (so far: {len(v.pending)} variant(s) not in steady state yet)"
    return text


def _line(v: Verdict) -> str:  # noqa: PLR0911 - one form a code
    code, ref = v.code, v.reference
    if code == "waiting_first":
        return "Verdict: waiting for the first run"
    if code == "no_reference":
        return ("Verdict: no answer: no eager run at the axes' baseline to compare with (add eager "
                "to --modes)")
    if code == "waiting_reference":
        return f"Verdict: waiting for {ref} to reach its steady state"
    if code == "reference_unmeasured":
        return f"Verdict: no answer: {ref}, the reference, {unmeasured_text(v.why)}"
    if code == "nothing_compiled":
        uncompiled = [d for d in v.disqualified if d["why"].code == "nothing_compiled"]
        names = ", ".join(d["label"] for d in uncompiled)
        why = uncompiled[0]["why"].get("why")
        measured = (f"; {ref} measured {fmt_ms(v.reference_ms)} a step"
                    if why.code == "double_backward" and v.reference_ms else "")
        return (f"Verdict: no answer: nothing was compiled in {names} — "
                f"{nothing_text(why).rstrip('.')}{measured}.")
    if code == "waiting_steady":
        counts, need = _few(v)
        return f"Verdict: waiting for more steady steps ({counts}; {need})"
    if code == "too_few":
        counts, need = _few(v)
        return f"Verdict: no answer: not enough steady steps ({counts}; {need}): {longer_text(v.longer)}"
    if code == "unreliable":
        more = f" (and {len(v.reasons) - 1} more, in the notes)" if len(v.reasons) > 1 else ""
        return (f"Verdict: unreliable, no winner named — {reason_text(v.reasons[0])}{more}. "
                f"{REMEDY[v.remedy]}.")
    if code == "cannot_tell" and (wide := v.candidate(v.about).get("untold")) is not None:
        unit = " per sample" if v.per_sample else ""
        return (f"Verdict: cannot tell — {v.about} against {ref}{unit}: {untold_why(wide)}, too wide "
                "for any figure. Measure again on a quiet machine, or longer (--steps, --repeats).")
    if code == "cannot_tell":
        basis = basis_text(v.candidate(v.about)["basis"])
        return (f"Verdict: cannot tell — {v.about} runs at {_ratio(v, v.about)}, an interval too wide "
                f"to tell a speedup from a slowdown; it rests on {basis}. Measure again on a quiet "
                "machine, or longer (--steps, --repeats).")
    if code == "stay":
        closest = f" — the closest, {v.about}, {_runs(v, v.about)}" if v.about else ""
        return f"Verdict: stay eager: no variant is faster beyond noise{closest}."
    if code == "same":  # --until-known: the interval lies within ±margin
        others = " and every other variant too" if len(v.candidates) > 1 else ""
        return (f"Verdict: stay eager: compile makes no difference worth having — {v.about} "
                f"{_runs(v, v.about)}, within ±{v.margin * 100:g} % of it{others}.")
    horizon = horizon_text(v.horizon) if v.horizon else ""
    if code == "stay_horizon":
        return (f"Verdict: stay eager for {horizon}{_started(v)}: no compile pays off that soon — "
                f"{v.about} is {_ratio(v, v.about)} but pays off only after {fmt_span(v.pays_after_s)}; "
                f"over {horizon} it would take {fmt_span(v.candidate(v.about)['total_s'])} instead of "
                f"{fmt_span(v.reference_total_s)}.")
    if code == "stay_horizon_noise":
        return (f"Verdict: stay eager for {horizon}: {v.about} would save {fmt_span(v.would_save_s)} "
                f"({fmt_pct(v.would_save)}), compile included, but that is within noise — at the slow "
                f"end of its 95 % interval ({v.candidate(v.about)['lo']:.2f}× {ref}) it would take "
                f"{fmt_span(v.slow_extra_s)} longer.")
    winner = v.winner
    if code == "use" and v.candidate(winner).get("untold") is not None:
        return (f"Verdict: use {winner} — {_ratio(v, winner)}; when its compile pays off and what it "
                "saves cannot be told either.")
    if code == "use":
        later = "from the start it saves" if v.payoff.get("at_once") else "a longer training run saves up to"
        return (f"Verdict: use {winner} — {_ratio(v, winner)}, {_pay(v)}; {later} {fmt_pct(v.saving)} "
                f"of its time{_as_fast(v)}.")
    text = (f"Verdict: use {winner} for {horizon} of training{_started(v)} — "
            f"{fmt_span(v.candidate(winner)['total_s'])} instead of {fmt_span(v.reference_total_s)} with "
            f"{ref}, compile included: {fmt_span(v.horizon_saving_s)} ({fmt_pct(v.horizon_saving)}) "
            f"less; {_ratio(v, winner)}, {_pay(v)}.")
    if v.about:
        text = (text[:-1] + f"; {v.about} is faster per step ({v.candidate(v.about)['speedup']:.2f}×) "
                f"but pays off only after {fmt_span(v.pays_after_s)}.")
    return text


def section(summary) -> Section:
    """The answer, first in every view (none before the summary has a verdict)."""
    v = summary.verdict
    if v is None:
        return Section("verdict")
    said = [Line(VERDICT, line(v), {"code": v.code, "kind": v.kind})]
    if summary.known is not None:  # --until-known: how far the answer is, or why it stopped
        said.append(known_text.line(summary.known))
    return Section("verdict", lines=tuple(said))


def reasons(v: Verdict) -> list[str]:
    """Why the comparison is unreliable, a line each (the notes give them all)."""
    return [reason_text(r) for r in v.reasons]


def disqualified(v: Verdict) -> list[dict]:
    """{label, run, reason} a variant that is no candidate; ``uncompiled`` too where it compiled
    nothing (why, in words)."""
    out = []
    for d in v.disqualified:
        item = {"label": d["label"], "run": d["run"], "reason": why_not_text(d["why"])}
        if d["why"].code == "nothing_compiled":
            item = {"label": d["label"], "run": d["run"], "uncompiled": nothing_text(d["why"].get("why")),
                    "reason": item["reason"]}
        out.append(item)
    return out


def to_dict(v: Verdict, said: str) -> dict:
    """The verdict as summary.json keeps it: its figures, its line (``said``: the document's) and
    the reasons in words, and the codes beside them."""
    doc = asdict(v)
    doc.update(line=said, reasons=reasons(v), reason_codes=[r.to_dict() for r in v.reasons],
               disqualified=[{**said, "code": d["why"].code}
                             for said, d in zip(disqualified(v), v.disqualified, strict=True)])
    for c, mine in zip(doc["candidates"], v.candidates, strict=True):
        c["basis"] = basis_text(mine["basis"])
        c["basis_code"] = mine["basis"].code if mine["basis"] is not None else None
        c["untold"] = mine["untold"].to_dict() if mine.get("untold") is not None else None
    for key in ("why", "longer", "payoff"):
        point_ = getattr(v, key)
        doc[key] = point_.to_dict() if point_ is not None else None
    return doc
