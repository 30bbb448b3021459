"""Issue 25, the diagnosis: what bounds every variant's step (eager included) from its phases —
input-bound, optimizer-bound (and the compile-the-optimizer variant raced), compute-bound, host
work between phases — on synthetic sessions whose steps carry a known split.

The real runs are in tests/e2e/test_phases_why_runs.py."""

from __future__ import annotations

import re

from said import top_lines, worded
from test_phases_stats import phased_events

from tuimon.analysis import summarize
from tuimon.fmt import fmt_ratio
from tuimon.report.export import to_markdown


def whys(*runs) -> dict:
    """Each variant's findings, in report/why_text.py's words."""
    return {v.label: v for v in worded(summarize([e for r in runs for e in r]))}


def rules(v) -> dict:
    return {f.rule: f for f in v.findings}


def text(f) -> str:
    return " | ".join([f.title, *f.evidence, *f.advice])


def test_an_input_bound_step_named_for_eager_and_compile_made_it_worse():
    eager = {"data": 4.0, "forward": 3.0, "backward": 2.5, "optimizer": 0.4}
    compiled = {**eager, "forward": 1.5, "backward": 1.5}
    found = whys(phased_events("eager-fp32", "eager", eager, seed=1),
                 phased_events("default-fp32", "default", compiled, seed=2))
    e = rules(found["eager/fp32"])["input_bound"]
    assert e.title == "input-bound: 40% of each step waits for data"
    assert not found["eager/fp32"].compiled and found["eager/fp32"].speedup is None
    c = rules(found["default/fp32"])["input_bound"]
    assert c.title == "input-bound: 53% of each step waits for data" and c.severity == 3
    assert "compile made the rest of the step shorter" in text(c) and "same loader" in text(c)
    assert found["default/fp32"].findings[0].rule == "input_bound"  # the reason, said first


def test_an_optimizer_bound_step_and_the_compiled_optimizer_raced():
    eager = {"data": 0.05, "forward": 2.0, "backward": 2.0, "optimizer": 6.0}
    default = {**eager, "forward": 1.2, "backward": 1.4}
    with_opt = {**default, "optimizer": 1.5}
    found = whys(phased_events("eager-fp32", "eager", eager, seed=1),
                 phased_events("default-fp32", "default", default, seed=2),
                 phased_events("default+opt-fp32", "default+opt", with_opt, seed=3))
    e = rules(found["eager/fp32"])["optimizer"]
    assert e.title == "optimizer-bound: optimizer.step() is 59% of the step"
    assert "leaves optimizer.step() as it is" in text(e)
    d = rules(found["default/fp32"])["optimizer"]
    assert d.title == "optimizer-bound: optimizer.step() is 68% of the step"
    assert "not optimizer.step(), unless asked" in text(d)
    raced = next(x for x in d.evidence if "raced" in x)
    assert raced.startswith("default+opt/fp32 (its optimizer step compiled too) raced default/fp32: "
                            "optimizer 4.0")
    assert raced.endswith("compiling the optimizer step pays")
    o = rules(found["default+opt/fp32"])["optimizer"]  # 1.5 ms of a 4.35 ms step: still 35 %
    assert "with the optimizer step compiled" in o.evidence[0] and "pays" in text(o)
    assert not o.advice[0].startswith("race")
    # Without the +opt variant, the advice is to race it.
    found = whys(phased_events("eager-fp32", "eager", eager, seed=1),
                 phased_events("default-fp32", "default", default, seed=2))
    d = rules(found["default/fp32"])["optimizer"]
    assert d.advice[0] == "race the optimizer step compiled too: --compile-optimizer (mode default+opt)"


def test_compute_bound_eager_and_compiles_effect_per_phase():
    eager = {"data": 0.05, "forward": 6.0, "backward": 4.0, "optimizer": 1.0}
    found = whys(phased_events("eager-fp32", "eager", eager, seed=1),
                 phased_events("default-fp32", "default",
                               {**eager, "forward": 6.0 / 1.62, "backward": 4.0 / 1.21}, seed=2))
    e = rules(found["eager/fp32"])["phases"]
    assert e.title == "compute-bound: forward and backward are 89% of the step"
    c = rules(found["default/fp32"])["phases"]
    assert c.title.startswith("by phase against eager/fp32: forward 1.6") and "backward 1.2" in c.title
    fwd = next(x for x in c.evidence if x.startswith("forward: "))
    pattern = r"forward: [56]\.\d\d ms → 3\.\d\d ms \(1\.6\d× faster \(95 % CI 1\.\d\d–[12]\.\d\d× faster\)\)"
    assert re.fullmatch(pattern, fwd), fwd


def test_a_slower_phase_words_its_interval_the_same_way():
    """Issue 33.6: "optimizer: 300 ms → 666 ms (2.22× slower, 95 % CI 0.15–1.32×)" read the
    ratio one way and its interval the other; both are worded alike now, medians both sides."""
    eager = {"data": 0.05, "forward": 3.0, "backward": 3.0, "optimizer": 3.0}
    found = whys(phased_events("eager-fp32", "eager", eager, seed=1),
                 phased_events("default-fp32", "default", {**eager, "optimizer": 4.0}, seed=2))
    c = rules(found["default/fp32"])
    line = next(x for x in c["phases"].evidence if x.startswith("optimizer: "))
    m = re.fullmatch(r"optimizer: 3\.\d\d ms → 4\.\d\d ms \(1\.3\d× slower \(95 % CI "
                     r"(\d\.\d\d)–(\d\.\d\d)× slower\)\)", line)
    assert m, line
    assert 1.0 < float(m.group(1)) <= 1.34 <= float(m.group(2))
    o = next(x for x in c["optimizer"].evidence if x.startswith("against eager/fp32"))
    assert re.match(r"against eager/fp32: optimizer's median 3\.\d\d ms → 4\.\d\d ms \(1\.3\d× slower", o), o


def test_ratio_words():
    assert fmt_ratio(0.746, 0.69, 0.81) == "1.34× slower (95 % CI 1.23–1.45× slower)"
    assert fmt_ratio(0.45, 0.15, 1.32) == "2.22× slower (95 % CI 6.67× slower to 1.32× faster: within noise)"
    assert fmt_ratio(1.62, 1.41, 1.86) == "1.62× faster (95 % CI 1.41–1.86× faster)"
    assert fmt_ratio(1.0, 0.9, 1.1) == "1.00× (95 % CI 1.11× slower to 1.10× faster: within noise)"
    assert fmt_ratio(1.3) == "1.30× faster"


def test_much_of_the_step_between_phases_is_said_without_a_guess():
    """No capture says what ran there: not called host work (issue 33.5; with a capture,
    test_why_outside.py)."""
    parts = {"data": 0.05, "forward": 2.0, "backward": 2.0, "optimizer": 0.5}
    found = whys(phased_events("eager-fp32", "eager", parts, other=2.0, seed=1))
    f = rules(found["eager/fp32"])["other"]
    assert f.title == "31% of the step is outside its timed phases"
    assert "host work between phases" not in text(f)


def test_the_summary_and_the_terminal_say_the_eager_diagnosis():
    eager = {"data": 4.0, "forward": 3.0, "backward": 2.5, "optimizer": 0.4}
    summary = summarize(phased_events("eager-fp32", "eager", eager, seed=1))
    md = to_markdown({}, summary)
    assert "## Why compile did not help, and what bounds each step" in md
    assert "### eager/fp32 (not compiled): what bounds its step" in md
    assert "1. **input-bound: 40% of each step waits for data** (high)" in md
    assert top_lines(summary)[0] == "why eager/fp32 (not compiled): what bounds its step:"
