"""Issue 33.5: much of a step outside its timed phases ("other") is named for what a profiler
capture shows ran there: another module's forward (a frozen loss network run twice a step, as in
pytorch/examples' fast_neural_style), tensor ops outside any module, or host work; without a
capture, only "outside the timed phases". The capture's ``outside`` table on a synthetic event
tree (runner/profiling/outside.py), the rule on synthetic sessions (analysis/why/outside.py) and
a real style-transfer-like script (tests/scripts/loss_network.py).

The real runs are in tests/e2e/test_why_outside_runs.py."""

from __future__ import annotations

import sys

from said import worded
from test_phases_stats import phased_events

from tuimon import events
from tuimon.analysis import summarize
from tuimon.runner.profiling.event_tree import Ev, nest
from tuimon.runner.profiling.outside import outside

PY = sys.executable
PARTS = {"data": 0.05, "forward": 2.0, "backward": 2.0, "optimizer": 0.5}  # other 2.0: 31 %


def table(modules: float, ops: float, host: float, items: float = 0.0) -> dict:
    """An ``outside`` table whose three kinds take these shares of the captured step."""
    return {"modules": [{"name": "LossNet", "calls": 2.0, "ms": 3.0 * modules, "share": modules,
                         "ops": ["aten::conv2d", "aten::relu"]},
                        {"name": "MSELoss", "calls": 5.0, "ms": 0.01, "share": 0.001, "ops": []}],
            "ops": [{"name": "aten::bmm", "calls": 4.0, "ms": 3.0 * ops, "share": ops}]
            + ([{"name": "aten::item", "calls": items, "ms": 0.01, "share": 0.001}] if items else []),
            "modules_share": modules, "ops_share": ops, "host_share": host}


def run_with(run: str, mode: str, outside_table: dict | None, seed: int = 1) -> list[dict]:
    evs = phased_events(run, mode, PARTS, other=2.0, seed=seed)
    if outside_table is not None:
        done = {"state": "done", "capture": 1, "source": "auto", "steps_recorded": 2,
                "active_steps": [11, 12], "partial": False, "compiles": 0, "step_ms": 7.0,
                "top_ops": [], "syncs": [], "split": {"step_ms": 7.0}, "outside": outside_table}
        evs.insert(-1, events.make(events.PROFILE, run, **done))
    return evs


def finding(evs: list[dict], label: str):
    (f,) = [f for v in worded(summarize(evs)) if v.label == label for f in v.findings
            if f.rule in ("other", "syncs")]
    return f


def text(f) -> str:
    return " | ".join([f.title, *f.evidence, *f.advice])


def test_without_a_capture_it_is_outside_the_timed_phases_not_host_work():
    f = finding(run_with("eager-fp32", "eager", None), "eager/fp32")
    assert f.rule == "other" and f.title == "31% of the step is outside its timed phases"
    assert "host work between phases" not in text(f) and "--profile-at" in text(f)


def test_a_modules_forward_outside_the_trained_module_is_named_not_host_work():
    f = finding(run_with("eager-fp32", "eager", table(0.25, 0.03, 0.02)), "eager/fp32")
    assert f.title == ("other: 31% of the step, mostly LossNet's forward outside the trained "
                       "module (2 calls a step)")
    assert "LossNet's forward ×2 a step 25% (aten::conv2d, aten::relu)" in text(f)
    assert "--compile-module LossNet" in text(f) and "torch.no_grad()" in text(f)
    assert "host work" not in f.title


def test_ops_outside_any_module_are_named():
    f = finding(run_with("eager-fp32", "eager", table(0.02, 0.2, 0.03)), "eager/fp32")
    assert f.title == "other: 31% of the step, mostly tensor ops outside any module (aten::bmm)"


def test_host_work_only_where_the_capture_shows_it():
    f = finding(run_with("eager-fp32", "eager", table(0.02, 0.03, 0.25, items=3.0)), "eager/fp32")
    assert f.rule == "syncs" and f.title == "host work between phases: 31% of the step is outside them"
    assert "3 scalar read(s) a step" in text(f) and ".item()" in text(f)


def test_a_compiled_variant_without_a_table_reads_its_eager_baselines_capture():
    evs = run_with("eager-fp32", "eager", table(0.25, 0.03, 0.02)) + run_with(
        "default-fp32", "default", None, seed=2)
    f = finding(evs, "default/fp32")
    assert "LossNet's forward outside the trained module" in f.title
    assert "in eager/fp32's capture of steps 11–12" in text(f)


def test_the_capture_table_sorts_the_steps_other_from_its_phases():
    """One step (µs): the trained module 0-30, a loss network 30-60 (two calls), a Gram matrix's
    bmm 62-66, backward 70-90, optimizer 90-96, the DataLoader 96-98; no op 60-62, 66-70, 98-100."""
    def ev(name, start, end, annotation=False):
        return Ev(name, start, end, annotation=annotation)

    evs = nest([ev("ProfilerStep#3", 0, 100, True),
                ev("module: Net (trained)", 0, 30, True), ev("aten::conv2d", 1, 29),
                ev("module: LossNet", 30, 44, True), ev("aten::conv2d", 31, 43),
                ev("module: LossNet", 44, 60, True), ev("aten::conv2d", 45, 58), ev("aten::relu", 58, 59),
                ev("aten::bmm", 62, 66),
                ev("autograd::engine::evaluate_function: ConvolutionBackward0", 70, 90),
                ev("tuimon: optimizer", 90, 96, True), ev("aten::add_", 91, 95),
                ev("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 96, 98, True)])
    out = outside([evs[0]], 1, 100.0)
    assert out["modules"] == [{"name": "LossNet", "calls": 2.0, "ms": 0.03, "share": 0.3,
                               "ops": ["aten::conv2d", "aten::relu"]}]
    assert out["ops"] == [{"name": "aten::bmm", "calls": 1.0, "ms": 0.004, "share": 0.04}]
    assert out["host_share"] == 0.08 and out["modules_share"] == 0.3


def test_a_compiled_variants_table_without_module_names_gives_way_to_eagers():
    unnamed = {**table(0.0, 0.3, 0.02), "modules": [], "modules_named": False}
    unnamed["ops"] = [{"name": "aten::conv2d", "calls": 20.0, "ms": 1.0, "share": 0.3}]
    alone = finding(run_with("default-fp32", "default", unnamed, seed=2), "default/fp32")
    assert alone.title == ("other: 31% of the step, mostly tensor ops outside the trained module "
                           "(aten::conv2d)")
    assert "does not name other modules" in text(alone)
    both = run_with("eager-fp32", "eager", table(0.25, 0.03, 0.02)) + run_with(
        "default-fp32", "default", unnamed, seed=2)
    assert "LossNet's forward outside the trained module" in finding(both, "default/fp32").title
