"""Issue 33.11, the smaller wrong answers: a strip that read "0.70× (CI 0.00–1570.14)" while a
session started, `compare A A` that could not tell, steps.csv's gap steps, step 0's data phase,
the loss of a step with several backward() calls, why first losses differ, and a compile frame
named after tuimon's own wrapper.

The real runs are in tests/e2e/test_small_answers_runs.py."""

from __future__ import annotations

import csv
import io

from test_stats import run_events

from tuimon import events
from tuimon.analysis import summarize
from tuimon.report.export import to_csv
from tuimon.report.table import loss_text
from tuimon.ui.widgets.comparison import ComparisonStrip


def strip(evs) -> str:
    return ComparisonStrip()._text(summarize(evs), None).plain


def test_the_strip_says_not_yet_under_the_steps_a_speedup_needs():
    few = run_events("eager-fp32", "eager", "fp32", [10.0] * 6, warmup=1) + run_events(
        "default-fp32", "default", "fp32", [14.0] * 6, warmup=1, first_ms=900.0)
    text = strip(few)
    assert "default/fp32 vs eager/fp32: not yet: 5 of 20 steady steps" in text, text
    assert "CI" not in text and "loss Δ" not in text
    enough = run_events("eager-fp32", "eager", "fp32", [10.0] * 60) + run_events(
        "default-fp32", "default", "fp32", [8.0] * 60, first_ms=900.0)
    assert "default/fp32 vs eager/fp32: 1.25×" in strip(enough)


def test_steps_csv_says_what_each_step_was():
    evs = run_events("eager-fp32", "eager", "fp32", [10.0] * 30)
    for e in evs:
        if e["type"] == events.STEP and e["i"] == 12:
            e["gap"] = 1
    rows = list(csv.DictReader(io.StringIO(to_csv(evs, summarize(evs)))))
    assert rows[12]["phase"] == "steady" and rows[12]["kind"] == "gap" and rows[12]["gap"] == "1"
    assert rows[11]["kind"] == "steady" and rows[11]["gap"] == ""
    assert rows[0]["kind"] == "warmup"


def test_why_first_losses_differ_is_told_apart():
    def session(eager_first: tuple[float, ...], default_first: float):
        evs = []
        for k, first in enumerate(eager_first, 1):
            evs += run_events(f"eager-fp32-{k}", "eager", "fp32", [10.0] * 40, replicate=k,
                              losses=[first] + [0.5] * 39)
            evs += run_events(f"default-fp32-{k}", "default", "fp32", [9.0] * 40, replicate=k,
                              losses=[default_first] + [0.5] * 39, first_ms=500.0)
        default = next(v for v in summarize(evs).variants if v.mode == "default")
        return default.loss.loss_apart, loss_text(default)

    apart, text = session((1.0, 1.0, 1.0), 1.3)  # eager's processes start alike: seeded
    assert apart == "random ops" and "compiled code draws dropout's" in text, text
    apart, text = session((1.0, 1.2, 0.9), 1.3)
    assert apart == "unseeded" and "does not seed itself" in text, text


def test_a_warm_start_counts_the_backward_graphs_it_loaded():
    """A forward compile that hit the AOTAutograd cache brings its backward graph with it (no lazy
    backward compile follows): "2 fwd + 0 bwd graphs" would say no backward was compiled."""
    evs = run_events("default-fp32", "default", "fp32", [8.0] * 40, first_ms=900.0)
    for k in range(2):
        evs.insert(3, events.make(events.COMPILE, "default-fp32", compile_id=f"{k}/0", forward=True,
                                  seconds=0.5, graph_ops=10, phases={}, aot_cache_hits=1))
    r = summarize(evs).runs[0]
    assert (r.compile.graphs_fwd, r.compile.graphs_bwd) == (2, 2)


def test_the_compile_pane_counts_graphs_not_attempts():
    import io

    from rich.console import Console

    from tuimon.ui.model import RunLive
    from tuimon.ui.widgets.compile_pane import render

    live = RunLive("default-script", "default", "script")
    live.compiles.append({"compile_id": "0/0", "forward": True, "frame": "forward", "seconds": 0.4,
                          "graph": False, "failed": "Unsupported",
                          "fail_reason": "Attempted to wrap RNN, GRU, or LSTM"})
    live.compiles.append({"compile_id": "1/0", "forward": True, "frame": "head", "seconds": 1.2,
                          "graph_ops": 4, "graph": True})
    console = Console(width=140, file=io.StringIO(), record=True)
    console.print(render(live, None))
    text = console.export_text()
    assert "1 compile, 1.6 s in all · 1 tried that made no graph (ran eager)" in text, text
    assert "eager: forward()" in text


def test_a_round_that_never_started_is_not_run_and_a_run_that_never_stepped_met_no_load():
    """mnist_hogwild's variants: round 1 measured nothing (its training ran in child processes),
    rounds 2 and 3 were not run. The combined row read "stopped" and its never-stepping round 1
    showed the machine's load "while it stepped"."""
    evs = [events.make(events.SESSION_STARTED, schedule="interleave", repeats=3)]
    for k in (1, 2, 3):
        run = "eager-script" + ("" if k == 1 else f"-{k}")
        evs.append(events.make(events.RUN_QUEUED, run, mode="eager", precision="script", replicate=k,
                               repeats=3))
        if k == 1:
            evs.append(events.make(events.RUN_STARTED, run, mode="eager", precision="script",
                                   device="cpu"))
            evs += [{"type": "sample", "t": 1000.0 + s, "system": {"foreign_cores": 1.4},
                     "runs": {run: {"cpu_percent": 60.0}}, "devices": []} for s in range(5)]
            evs.append(events.make(events.FINISHED, run, reason="script ended"))
        else:
            evs.append(events.make(events.FINISHED, run, reason="stopped"))
    s = summarize(evs)
    row = s.variants[0]
    assert row.status == "done" and [p["status"] for p in row.processes] == ["done", "not run", "not run"]
    assert row.load.foreign_cores is None and s.runs[0].load.foreign_cores is None
