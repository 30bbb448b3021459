"""Where a step goes, in words: the summary table's rows for each phase (data, forward, backward,
optimizer, eval where a run had it, other), and the short texts the comparison strip, the
overlay and the panel's phase bar share ("fwd 1.62× · bwd 1.21× · opt 1.00× · data 1.00×").
The numbers come from analysis/stats/phases.py; only their wording is here."""

from __future__ import annotations

from tuimon.analysis import PART_SHORT, STEP_PARTS, RunStats, SessionSummary, columns
from tuimon.fmt import DASH, fmt_ms, fmt_short
from tuimon.report.untold_text import untold_text

# The order compile's effect is told in: the parts it may speed up first.
SPEEDUP_ORDER = ("forward", "backward", "optimizer", "data")


def part_cell(r: RunStats, name: str) -> str:
    """'6.00 ms (5.80–6.21) · 44 % · 1.62× (95 % CI 1.41–1.86)'"""
    if name in r.phases.phases_missing:
        return "not seen (in other)"
    p = r.phases.step_phases.get(name)
    if not p:
        return DASH
    text = f"{fmt_ms(p['median_ms'])} ({fmt_ms(p['p10_ms'])}–{fmt_ms(p['p90_ms'])})"
    if p.get("share") is not None:
        text += f" · {p['share'] * 100:.0f} %"
    if p.get("untold") is not None:  # no figure: its interval holds every answer
        text += f" · {untold_text(p['untold'])}"
    elif p.get("speedup") is not None:
        text += f" · {p['speedup']:.2f}×"
        if p.get("speedup_lo") is not None:
            text += f" (95 % CI {p['speedup_lo']:.2f}–{p['speedup_hi']:.2f})"
    return text


def part_rows(summary: SessionSummary) -> list[tuple[str, object]]:
    """The table's rows, one a phase, when any run split its steps (eval's only when a run's
    steps ran some: a script's eval forwards inside its step)."""
    runs = columns(summary)
    if not any(r.phases.step_phases for r in runs):
        return []
    return [(f"step: {name} (median, p10–p90, share; vs eager)",
             lambda r, name=name: part_cell(r, name)) for name in STEP_PARTS
            if name != "eval" or any("eval" in r.phases.step_phases for r in runs)]


def speedups_text(r: RunStats, intervals: bool = False) -> str:
    """'fwd 1.62× · bwd 1.21× · opt 1.00× · data 1.00×' (empty without any)."""
    out = []
    for name in SPEEDUP_ORDER:
        p = r.phases.step_phases.get(name) or {}
        if p.get("speedup") is None:
            continue
        if p.get("untold") is not None:  # the why is the table's (part_cell)
            out.append(f"{PART_SHORT[name]} cannot tell")
            continue
        text = f"{PART_SHORT[name]} {p['speedup']:.2f}×"
        if intervals and p.get("speedup_lo") is not None:
            text += f" ({p['speedup_lo']:.2f}–{p['speedup_hi']:.2f})"
        out.append(text)
    return " · ".join(out)


def medians(r: RunStats) -> list[tuple[str, str, str]]:
    """(phase, short name, its median in ms, two digits: '0.23', '4.1', '12') of each phase, in
    order; '?' for a phase the steps could not see: what the panel's bar writes beside it."""
    out = []
    for name in STEP_PARTS:
        if name in r.phases.phases_missing:
            out.append((name, PART_SHORT[name], "?"))
        elif name in r.phases.step_phases:
            out.append((name, PART_SHORT[name], fmt_short(r.phases.step_phases[name]["median_ms"])))
    return out


def shares(r: RunStats) -> list[tuple[str, float]]:
    """(phase, share of the mean step) in order, for a stacked bar."""
    return [(name, p["share"]) for name, p in r.phases.step_phases.items() if p.get("share")]
