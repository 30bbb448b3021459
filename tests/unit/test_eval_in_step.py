"""Issue 33.3: eval forwards inside every step (a graph network's train and validation accuracy,
pytorch/examples' gcn and gat) are part of the step, its eval phase, not a validation gap; an
occasional validation pass stays a gap. The rule (runner/script/validation.py's ``Recurring``),
the eval part (runner/phases.py, the forward timer), the statistics and the words, on synthetic
events and on a real gcn-style script (tests/scripts/graph_eval.py).

The real runs are in tests/e2e/test_eval_in_step_runs.py."""

from __future__ import annotations

import csv
import io
import sys
import time

import pytest
import torch
from test_phases_stats import phased_events

from tuimon import events
from tuimon.analysis import summarize
from tuimon.report import export
from tuimon.report.verdict_text import line as verdict_line
from tuimon.runner.phases import EVAL, FORWARD, OTHER, Timeline
from tuimon.runner.script.phases import ForwardTimer
from tuimon.runner.script.validation import HELD_EVAL, HELD_LOADER, Recurring

PY = sys.executable


def gaps_of(held: list[int], compiled: set[int] = frozenset()) -> list[int]:
    """The steps ``Recurring`` calls gaps, for what each step held."""
    rule, notes = Recurring(), []
    return [i for i, h in enumerate(held) if rule.gap(i, h, i in compiled, notes.append)]


def test_eval_in_every_step_is_no_gap_and_an_occasional_pass_is():
    # gcn: the first step ends at the first optimizer.step(); every later one holds two evals.
    assert gaps_of([0] + [HELD_EVAL] * 20) == [1]
    # A validation pass after each 8-step epoch, from its own loader: each one a gap.
    epochs = [HELD_EVAL | HELD_LOADER if i and i % 8 == 0 else 0 for i in range(33)]
    assert gaps_of(epochs) == [8, 16, 24, 32]
    # An eval every other step never recurs step after step: a gap each time.
    assert gaps_of([HELD_EVAL if i % 2 else 0 for i in range(10)]) == [1, 3, 5, 7, 9]
    # Eval in every step, and a pass with its own loader now and then: the pass is a gap.
    mixed = [0] + [HELD_EVAL] * 15
    mixed[9] = HELD_EVAL | HELD_LOADER
    assert gaps_of(mixed) == [1, 9]
    # A recurring step whose eval compiled (a one-time cost) is kept apart too.
    assert gaps_of([0] + [HELD_EVAL] * 10, compiled={4}) == [1, 4]


def test_the_recurrence_is_said_once():
    rule, notes = Recurring(), []
    for i, h in enumerate([0] + [HELD_EVAL] * 5):
        rule.gap(i, h, False, notes.append)
    assert len(notes) == 1 and notes[0].startswith("model.eval() in every step since step 1")


def test_the_timeline_has_an_eval_part_only_where_a_step_ran_one():
    clock = [0.0]
    tl = Timeline()
    tl.perf = lambda: clock[0]
    for part, seconds in ((FORWARD, 0.002), (EVAL, 0.003)):
        tl.acc[part] += seconds
    tl.acc[0] = tl.acc[2] = tl.acc[3] = 0.001
    assert tl.end() == (1.0, 2.0, 1.0, 1.0, 3.0)
    tl.acc[0] = tl.acc[1] = tl.acc[2] = tl.acc[3] = 0.001
    assert tl.end() == (1.0, 1.0, 1.0, 1.0)  # no eval this step: four parts, as before
    assert tl.acc == [0.0] * (OTHER + 1)


def test_the_trained_modules_calls_with_gradients_off_are_eval_not_forward(monkeypatch):
    clock = [1000.0]
    monkeypatch.setattr(time, "perf_counter", lambda: clock[0])  # moves only in forward: 5 ms

    class Timed(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(4, 2)

        def forward(self, x):
            clock[0] += 0.005
            return self.fc(x)

    tl, notes = Timeline(), []
    timer = ForwardTimer(tl, notes.append)
    model = Timed()
    timer.optimizer_made(torch.optim.SGD(model.parameters(), lr=0.1))
    try:
        x = torch.randn(3, 4)
        model(x)  # found at its first call, timed from the next
        tl.begin()
        model(x).sum().backward()
        model.eval()
        with torch.no_grad():
            model(x)
            model(x)
        model.train()
        with torch.inference_mode():
            model(x)
        ph = tl.end()
    finally:
        timer._disarm()
    # one training forward; three without gradients (eval mode or not)
    assert ph[FORWARD] == pytest.approx(5.0) and ph[EVAL] == pytest.approx(15.0), ph


def test_the_cuda_clock_splits_out_eval_only_in_a_step_that_marked_it():
    from test_units import FakeCuda, FakeEvent

    from tuimon.runner.phases import BACKWARD, DATA, OPTIMIZER
    from tuimon.runner.timing import CudaClock

    FakeEvent.recorded, FakeEvent.completed_upto, FakeEvent.syncs = [], -1, 0
    col = [None] * 4
    clock = CudaClock(FakeCuda, ph_col=col, mask=3)  # every event 2.5 ms after the one before
    clock.start()
    for part in (OTHER, EVAL, EVAL, FORWARD, BACKWARD, OPTIMIZER):  # each ends a stretch
        clock.mark(part)
    clock.stop(unseen=(DATA,))
    clock.start()
    for part in (FORWARD, BACKWARD, OPTIMIZER):
        clock.mark(part)
    clock.stop(unseen=(DATA,))
    FakeEvent.completed_upto = len(FakeEvent.recorded)
    clock.ready()
    assert col[0] == (None, 2.5, 2.5, 2.5, 5.0)
    assert col[1] == (None, 2.5, 2.5, 2.5)  # no eval this step: four parts
    assert FakeEvent.syncs == 0


def eval_steps(run: str, mode: str, *, steps: int = 200, gap_every: int = 0) -> list[dict]:
    """A run whose steps hold forward 6 ms, eval 9 ms (a fifth ph entry) and the rest."""
    out = phased_events(run, mode, {"data": 0.0, "forward": 6.0, "backward": 4.0, "optimizer": 1.0},
                        steps=steps, seed=3)
    for e in out:
        if e["type"] == events.STEP:
            e["ph"].append(9000)
            e["ms"] = round(e["ms"] + 9.0, 4)
            if gap_every and e["i"] % gap_every == 0:
                e["gap"] = 1
    return out


def test_the_eval_phase_is_measured_apart_from_forward_and_other():
    summary = summarize(eval_steps("eager-script", "eager"))
    (r,) = summary.runs
    assert r.phases.step_phases["eval"]["median_ms"] == 9.0
    assert abs(r.phases.step_phases["forward"]["median_ms"] - 6.0) < 0.5
    assert abs(r.phases.step_phases["other"]["median_ms"] - 0.2) < 0.1  # eval is not in other
    assert abs(sum(p["share"] for p in r.phases.step_phases.values()) - 1.0) < 1e-6
    md = export.to_markdown({}, summary)
    assert "| step: eval (median, p10–p90, share; vs eager) | 9.00 ms" in md
    text = export.to_csv(eval_steps("eager-script", "eager"), summary)
    row = next(csv.DictReader(io.StringIO(text)))
    assert float(row["eval_phase_ms"]) == 9.0


def test_a_run_without_eval_has_no_eval_row():
    md = export.to_markdown({}, summarize(phased_events("eager-fp32", "eager", {"forward": 6.0})))
    assert "| step: forward" in md and "| step: eval" not in md


def test_a_run_whose_steps_were_all_gaps_is_not_said_to_have_ended_in_its_warm_up():
    evs = eval_steps("eager-script", "eager", steps=150, gap_every=1)
    evs += eval_steps("default-script", "default", steps=150, gap_every=1)
    summary = summarize(evs)
    line = verdict_line(summary.verdict)
    assert "150 of its 150 steps held a validation pass" in line, line
    assert "within its warm-up" not in line
