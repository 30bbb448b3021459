"""Page faults per step (analysis/stats/faults.py) and --pin-malloc: a run whose steps map fresh
memory says so, a comparison between runs that fault at very different rates is marked
unreliable, and --pin-malloc removes the faults of a real run that had them.

The real runs are in tests/e2e/test_faults_runs.py."""

from __future__ import annotations

from conftest import TEST_RECIPES
from test_stats import by_label, run_events

from tuimon import events
from tuimon.analysis.stats import summarize
from tuimon.analysis.stats.faults import FaultTrack
from tuimon.fmt import fmt_count
from tuimon.report.table import table
from tuimon.report.trust_text import unreliable_text
from tuimon.report.verdict_text import line

ALLOC = str(TEST_RECIPES / "alloc_each_step.py")


def with_faults(evs: list[dict], per_step: float, every: int = 10) -> list[dict]:
    """A memory event after every ``every`` steps, its minflt growing ``per_step`` a step."""
    out, steps = [], 0
    for e in evs:
        out.append(e)
        if e["type"] == events.STEP:
            steps += 1
            if steps % every == 0:
                out.append(events.make(events.MEMORY, e["run"], peak_rss=2**20,
                                       minflt=int(5000 + steps * per_step)))
    return out


def test_a_window_counts_only_when_all_its_steps_were_measured():
    track = FaultTrack()
    track.mark(1000, 5, 0)  # baseline: five warm-up steps so far
    track.mark(3000, 10, 3)  # 5 steps, 3 measured: a window with warm-up in it says nothing
    track.mark(5000, 20, 13)  # 10 measured steps, 2 000 faults
    track.mark(None, 30, 23)  # an older runner: no minflt
    track.mark(9000, 30, 23)  # 10 more, 4 000 faults
    assert list(track.rates) == [200.0, 400.0] and track.per_step() == 300.0
    assert FaultTrack().per_step() is None


def test_runs_that_fault_alike_compare_as_usual():
    ms = [20.0] * 60
    evs = with_faults(run_events("e", "eager", "fp32", ms), 3000)
    evs += with_faults(run_events("d", "default", "fp32", [18.0] * 60), 3100)
    s = by_label(summarize(evs))
    assert s["eager/fp32"].load.faults_per_step == 3000 and s["default/fp32"].load.faults_per_step == 3100
    assert not s["default/fp32"].load.faults_differ and not s["default/fp32"].doubts


def test_runs_that_fault_at_very_different_rates_are_not_compared_as_if_alike():
    """9 200 faults a step against 2 300 on ~200 ms steps (the timm resnet18 processes of
    bench/RESULTS.md): at 2 µs a fault that is ≥ 14 ms a step, over 5 % of it."""
    evs = with_faults(run_events("e", "eager", "fp32", [200.0] * 60), 9200)
    evs += with_faults(run_events("d", "default", "fp32", [190.0] * 60, first_ms=5000.0), 2300)
    summary = summarize(evs)
    d = by_label(summary)["default/fp32"]
    assert d.load.faults_differ
    assert "page faults differed: 9.2k a step in eager/fp32, 2.3k in default/fp32" in unreliable_text(d)
    assert "--pin-malloc" in unreliable_text(d)
    assert summary.verdict.kind == "unreliable" and "--pin-malloc" in line(summary.verdict)
    header, rows = table(summary)
    cells = dict((row[0], row[1:]) for row in rows)
    assert cells["page faults per step"] == ["9.2k", "2.3k"]
    assert "unreliable: page faults differed" in cells["speedup vs eager"][1]


def test_no_fault_figures_no_row():
    """Sessions of an older tuimon (memory events without minflt) show no page-fault row."""
    evs = run_events("e", "eager", "fp32", [10.0] * 40, peak_rss=2**20)
    header, rows = table(summarize(evs))
    assert "page faults per step" not in [row[0] for row in rows]


def test_counts_read_at_a_glance():
    assert [fmt_count(x) for x in (0, 42.4, 999, 9184, 17217, 1.3e6, None)] == \
        ["0", "42", "999", "9.2k", "17k", "1.3M", "–"]
