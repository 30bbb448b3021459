"""Issue 25, the views: the summary's phase rows, steps.csv's columns, the panel's phase bar,
the comparison strip's and the overlay's per-phase speedups (from synthetic sessions whose
steps carry a known split)."""

from __future__ import annotations

import csv
import io
import re

from test_phases_stats import COMPILED, EAGER, phased_events
from test_ui_answer import Recorder, settle

from tuimon import events
from tuimon.analysis import summarize
from tuimon.report import export
from tuimon.report.phase_text import speedups_text
from tuimon.ui.app import TuimonApp
from tuimon.ui.widgets.comparison import ComparisonStrip
from tuimon.ui.widgets.phase_bar import PhaseBar
from tuimon.ui.widgets.run_panel import RunPanel


def two_runs(**kwargs) -> list[dict]:
    return (phased_events("eager-fp32", "eager", EAGER, seed=1, **kwargs)
            + phased_events("default-fp32", "default", COMPILED, seed=2, **kwargs))


def test_the_summary_table_has_a_row_a_phase_with_its_speedup():
    summary = summarize(two_runs())
    md = export.to_markdown({}, summary)
    rows = {line.split(" | ")[0].lstrip("| "): line for line in md.splitlines()
            if line.startswith("| step: ")}
    assert list(rows) == [f"step: {p} (median, p10–p90, share; vs eager)"
                          for p in ("data", "forward", "backward", "optimizer", "other")]
    forward = rows["step: forward (median, p10–p90, share; vs eager)"].split(" | ")
    assert re.fullmatch(r"[56]\.\d\d ms \(5\.\d\d ms–6\.\d\d ms\) · 4\d %", forward[1])  # no speedup
    assert re.fullmatch(r"1\.6\d× \(95 % CI 1\.\d\d–[12]\.\d\d\)", forward[2].split(" · ")[2].rstrip(" |"))
    c = next(r for r in summary.runs if r.mode == "default")
    assert speedups_text(c).startswith("fwd 1.6") and " · bwd 1.2" in speedups_text(c)


def test_a_phase_not_seen_reads_so_in_the_table():
    md = export.to_markdown({}, summarize(two_runs(missing=("data",))))
    line = next(x for x in md.splitlines() if x.startswith("| step: data"))
    assert line.count("not seen (in other)") == 2


def test_no_row_without_phases_an_old_session():
    evs = two_runs()
    for e in evs:
        e.pop("ph", None)
    assert "| step: " not in export.to_markdown({}, summarize(evs))


def test_steps_csv_has_a_column_a_phase():
    evs = two_runs(missing=("data",))
    text = export.to_csv(evs, summarize(evs))
    rows = list(csv.DictReader(io.StringIO(text)))
    assert [c for c in rows[0] if c.endswith("_phase_ms")] == [
        "data_phase_ms", "forward_phase_ms", "backward_phase_ms", "optimizer_phase_ms", "eval_phase_ms",
        "other_phase_ms"]
    step = next(e for e in evs if e["type"] == events.STEP)
    first = rows[0]
    assert first["data_phase_ms"] == ""  # not seen: empty, never 0
    assert first["eval_phase_ms"] == ""  # no eval forwards in the step
    assert float(first["forward_phase_ms"]) == step["ph"][1] / 1000
    total = sum(float(first[f"{p}_phase_ms"]) for p in ("forward", "backward", "optimizer", "other"))
    assert abs(total - float(first["ms"])) < 2e-3  # other is the rest of the step


async def test_each_panel_shows_its_phase_bar_and_the_strip_compiles_effect_per_phase(tmp_path):
    app = TuimonApp(Recorder(tmp_path, two_runs()))
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(app, pilot)
        bars = [p.query_one(PhaseBar) for p in app.query(RunPanel)]
        assert all(b.display for b in bars)
        texts = [str(b.render()) for b in bars]
        assert texts[0].startswith("█") and "data 1.0 fwd 6.0 bwd 4.0 opt 2.0 other 0.20 ms" in texts[0]
        strip = str(app.query_one(ComparisonStrip).render())
        assert "by phase: fwd 1.6" in strip and "· opt 1.0" in strip
        await pilot.press("o")
        await settle(app, pilot)
        legend = str(app.query_one("#overlay-legend").render())
        assert "default/fp32 (fwd 1.6" in legend


async def test_the_bar_stays_hidden_without_phases(tmp_path):
    evs = two_runs()
    for e in evs:
        e.pop("ph", None)
    app = TuimonApp(Recorder(tmp_path, evs))
    async with app.run_test(size=(120, 32)) as pilot:
        await settle(app, pilot)
        assert not any(p.query_one(PhaseBar).display for p in app.query(RunPanel))
        assert "by phase" not in str(app.query_one(ComparisonStrip).render())


async def test_the_phase_bar_says_flops_and_mfu_once_the_run_counted_them(tmp_path):
    """Issue 35: a second line under the bar, 'fwd 1 TFLOP/s · 50 % of measured peak ...'; an
    MFU over 100 % reads as a question, never a figure."""
    from test_flops_stats import flops_event

    evs = two_runs()
    evs.insert(2, flops_event("eager-fp32", peaks={"fp32": 2e12}))
    evs.append(flops_event("default-fp32", peaks={"fp32": 1.5e12}))  # its backward: over 100 %
    app = TuimonApp(Recorder(tmp_path, evs))
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(app, pilot)
        texts = [str(p.query_one(PhaseBar).render()) for p in app.query(RunPanel)]
        eager, compiled = texts
        assert re.search(r"\nfwd 1(\.0\d)? TFLOP/s · 5\d % of measured peak  bwd 2(\.0\d)? TFLOP/s", eager)
        assert "over 100 % of the peak?" in compiled and "%" in compiled.split("\n")[1]
