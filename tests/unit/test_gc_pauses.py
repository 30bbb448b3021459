"""The step engine's worked example of a per-step measurement (docs/development.md): Python's
garbage collector in the steps, from the runner's component (runner/gc_pauses.py) through its
event to the row's figures (analysis/stats/gc_pauses.py) and the table's words."""

from __future__ import annotations

import gc

import torch
from test_hot_path import tiny_trainer
from test_profiling import ListEmitter
from test_stats import run_events

from tuimon import events
from tuimon.analysis import summarize
from tuimon.report.table import table
from tuimon.runner import recipe_loop


def test_the_collectors_pauses_go_out_in_doubling_windows_up_to_256_steps_and_at_the_end():
    emitter = ListEmitter()
    junk = []

    def step(batch):  # a step that leaves cycles behind: the collector runs now and then
        for _ in range(300):
            a: list = []
            a.append(a)
            if len(junk) < 10:
                junk.append(a)
        return torch.zeros(())

    gc.collect()
    recipe_loop.train_steps(tiny_trainer(step=step), emitter, 600)
    said = [e for e in emitter.events if e["type"] == events.GC]
    assert [e["steps"] for e in said] == [[0, 16], [16, 32], [32, 64], [64, 128], [128, 256],
                                          [256, 512], [512, 600]]
    assert sum(e["collections"] for e in said) > 0 and all(e["seconds"] >= 0 for e in said)
    assert not [cb for cb in gc.callbacks if type(getattr(cb, "__self__", None)).__name__ == "GcPauses"]


def test_a_rows_gc_figures_are_its_steady_windows_and_worded_when_they_matter():
    evs = run_events("eager-fp32", "eager", "fp32", [10.0] * 60)
    evs[-2:-2] = [
        events.make(events.GC, "eager-fp32", steps=[0, 30], collections=9, oldest=1, seconds=0.5),
        events.make(events.GC, "eager-fp32", steps=[30, 60], collections=3, oldest=0, seconds=0.15)]
    summary = summarize(evs)
    (r,) = summary.runs
    assert r.timing.steady_from <= 30  # the steady windows: the second one
    assert (r.timing.gc_ms, r.timing.gc_per_100) == (5.0, 10.0)  # 150 ms over 30 steps, 3 runs
    header, rows = table(summary)
    (row,) = [row for row in rows if row[0] == "Python GC pauses"]
    assert row[1] == "5.00 ms a step (50% of the median step) · 10 collections per 100 steps"


def test_a_window_holding_the_warm_up_is_no_figure_of_the_steady_steps():
    """Rerun of issue 40 (N2): a 61-step llama2.c run had one gc window [0, 61], its compile's
    1,016 collections in it, and the row read "20.1 ms a step (76 % of the median step)"."""
    evs = run_events("default-fp32", "default", "fp32", [10.0] * 60)
    evs[-2:-2] = [events.make(events.GC, "default-fp32", steps=[0, 60], collections=1016,
                              oldest=3, seconds=1.2)]
    (r,) = summarize(evs).runs
    assert r.timing.steady_from > 0
    assert (r.timing.gc_ms, r.timing.gc_per_100) == (None, None)
