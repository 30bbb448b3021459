"""Issue 40.4: an interval too wide to tell is said "cannot tell" and why, with no figure, on every
surface (the table, the notes, the verdict, the Why, the phases, the strip, summary.json's words,
``tuimon compare``, ``tuimon try``); summary.json keeps the figures. The rule is one, in
analysis/stats/noise.py (``untold``, ``untold_change``)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from test_busy_rounds import demo

from tuimon.analysis import RunStats, SessionSummary, summarize, tried
from tuimon.analysis.stats.change import Change
from tuimon.analysis.stats.noise import UNTOLD, untold, untold_change
from tuimon.analysis.stats.point import point
from tuimon.analysis.stats.records import Comparison, Phases, Timing
from tuimon.report import why_text
from tuimon.report.compare_text import change_text, plan_text
from tuimon.report.export import to_json, to_markdown
from tuimon.report.notes_text import noise_notes
from tuimon.report.phase_text import part_cell, speedups_text
from tuimon.report.table import breakeven_text, speedup_text
from tuimon.report.try_text import outcome_line, plan_lines
from tuimon.report.verdict_text import line
from tuimon.ui.widgets.comparison import ComparisonStrip

WHY = "its 95 % interval reaches beyond ÷3 and ×3 of its estimate: "
FIGURE = re.compile(r"\d\.\d\d×|95 % CI|±\d{4,}")  # a speedup, its interval, a least told change


def test_the_rule_is_a_factor_of_3_either_side_of_the_estimate():
    assert UNTOLD == 3.0
    assert untold(0.5, 1.99) is None and untold(None, None) is None and untold(0.46, 2.34) is None
    wide = untold(0.1, 1.01, "unpaired")
    assert wide.code == "untold" and wide.get("side") is None and wide.get("rests") == "unpaired"
    assert untold(0.0, 4.4).get("side") is None  # "0.01× (CI 0.00–4.40)"
    assert untold(2.0, 20.0).get("side") == "above" and untold(0.02, 0.5).get("side") == "below"
    assert untold(1 / 3.95, 4187.29).get("side") is None  # "3.95× slower to 4187.29× faster"
    assert not untold_change(199.0) and untold_change(201.0) and untold_change(148824.0)
    assert not untold_change(None)


def busy_session():
    """One round's eager 90× slow and no load measured: every interval holds every answer."""
    return summarize([e for e in demo((0.0, 0.0, 0.0)) if e["type"] != "sample"])


def test_a_session_too_noisy_to_tell_says_cannot_tell_everywhere_and_keeps_the_figures():
    summary = busy_session()
    row = next(v for v in summary.variants if v.mode == "default")
    assert row.compare.untold.code == "untold" and row.compare.speedup_hi / row.compare.speedup_lo > 9
    cell = speedup_text(row)
    assert cell == f"cannot tell ({WHY}the processes of each round ran that far apart)"
    assert breakeven_text(row).startswith("cannot tell (the speedup's 95 % interval reaches beyond ÷3")
    assert summary.plan["untold"]  # its least told change: ±311662 %
    (note,) = noise_notes(summary)
    assert "this session can tell none of the speedups compile commonly gives" in note
    said = line(summary.verdict)
    assert said.startswith("Verdict: cannot tell — default/fp32 against eager/fp32: " + WHY)
    (head,) = [x for x in why_text.section(summary).lines if x.figures["compiled"]]
    assert head.text == (f"default/fp32: against eager/fp32: {cell} — cannot tell whether compile helped")
    md = to_markdown({}, summary)
    assert FIGURE.findall(md.split("## Why")[0]) == ["1.00×"]  # eager's own cell, against itself
    strip = ComparisonStrip()._text(summary, None).plain
    assert f"default/fp32 vs eager/fp32: {cell}" in strip and not FIGURE.search(strip)
    # summary.json: the words say it; the figures and the code stay, as data
    doc = json.loads(to_json({}, summary))
    (c,) = doc["verdict"]["candidates"]
    assert c["untold"]["code"] == "untold" and c["lo"] > 0 and c["hi"] / c["lo"] > 9
    assert doc["verdict"]["line"] == said and doc["plan"]["detectable_pct"] > 1000
    (compiled,) = [v for v in doc["variants"] if v["mode"] == "default"]
    assert compiled["compare"]["untold"]["rests"] == "paired" and compiled["compare"]["speedup_lo"]
    (why,) = [w for w in doc["why"] if w["compiled"]]
    assert why["headline"] == head.text and why["doubted"]


def test_a_phase_too_wide_to_tell_has_no_figure():
    wide = untold(0.1, 3.0, "own_noise")
    r = RunStats("default-fp32", "default", "fp32", phases=Phases({
        "forward": {"median_ms": 2.0, "p10_ms": 1.9, "p90_ms": 2.2, "share": 0.5, "speedup": 0.4,
                    "speedup_lo": 0.1, "speedup_hi": 3.0, "untold": wide},
        "backward": {"median_ms": 2.0, "p10_ms": 1.9, "p90_ms": 2.2, "share": 0.5, "speedup": 1.6,
                     "speedup_lo": 1.4, "speedup_hi": 1.8, "untold": None}}))
    assert part_cell(r, "forward") == ("2.00 ms (1.90 ms–2.20 ms) · 50 % · cannot tell (" + WHY +
                                       "the steps of each process spread that much)")
    assert speedups_text(r, intervals=True) == "fwd cannot tell · bwd 1.60× (1.40–1.80)"


def test_compare_and_try_word_an_interval_too_wide_without_a_figure():
    wide = Change(3.0, 0.02, 400.0, False, untold(0.02, 400.0))
    assert change_text(wide) == f"cannot tell ({WHY}the steps or the processes spread that much)"
    slower = Change(9.0, 1.5, 50.0, True, untold(1.5, 50.0, "unpaired"))
    assert change_text(slower).startswith("slower beyond noise, by how much cannot tell (")
    told = plan_text(point("never", least=148824.0, untold=True, pct=5.0))
    assert told.startswith("these sessions can tell no change of the size compile commonly makes")
    assert "148824" not in told
    across = untold(1 / 3.95, 4187.29, "paired")
    steps = Timing(median_ms=2.0, measured=100, steps=120)
    base = RunStats("default-fp32", "default", "fp32", timing=steps)
    fixed = RunStats("default-fp32-fix", "default", "fp32", timing=steps, compare=Comparison(
        axis_speedup=32.56, axis_speedup_lo=1 / 3.95, axis_speedup_hi=4187.29, axis_untold=across))
    assert tried.unsure(SessionSummary([base, fixed]), fixed, base) == (across,)  # not "no better"
    tried_on = RunStats("default-fp32", "default", "fp32", compare=Comparison(speedup=32.56, untold=across))
    assert plan_lines(tried.TryPlan(tried_on, ()), Path("s"))[0] == (
        f"try: s: fixes on default/fp32 (against eager: cannot tell ({WHY}the processes of each round ran "
        "that far apart))")
    o = tried.Outcome("regional", "r", "default/fp32 · fix=regional", tried.CANNOT_TELL, speedup=32.56,
                      speedup_lo=1 / 3.95, speedup_hi=4187.29, untold=across, unsure=(across,))
    assert outcome_line(o) == ("regional: step cannot tell — cannot tell: the step's 95 % interval reaches "
                               "beyond ÷3 and ×3 of its estimate: the processes of each round ran that far "
                               "apart")
    above = untold(2.0, 20.0, "unpaired")
    o = tried.Outcome("opt", "r", "x", tried.HELPED, speedup=6.3, speedup_lo=2.0, speedup_hi=20.0,
                      untold=above)
    assert outcome_line(o).startswith("opt: step faster beyond noise, by how much cannot tell (")
