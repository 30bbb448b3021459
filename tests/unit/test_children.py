"""Training in child processes (issue 33, item 4): pytorch/examples' mnist_hogwild trains in
``torch.multiprocessing`` children; tuimon hooks only the script's own process, which never
steps. The answer is one line (the steps ran in child processes tuimon does not hook, with the
children's own count), never "within its warm-up" or "still starting", and a --duration shared
in rounds does not run the script again for nothing (runner/script/children.py).

The real runs are in tests/e2e/test_children_runs.py."""

from __future__ import annotations

import json
import os
import sys
from types import SimpleNamespace

import torch
from test_stats import run_events

from tuimon import events
from tuimon.analysis.stats import summarize
from tuimon.report.verdict_text import disqualified
from tuimon.report.verdict_text import line as verdict_line
from tuimon.runner.script.children import Children, run_child, skipped, target_name

PY = sys.executable


def train_three_steps():
    model = torch.nn.Linear(2, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(3):
        opt.zero_grad()
        model(torch.randn(4, 2)).sum().backward()
        opt.step()
    return "trained"


def test_a_childs_target_runs_as_it_is_and_its_steps_are_counted(tmp_path):
    """run_child is what a child runs instead of its target: the target's own result, and a
    count of its optimizer steps and backward() calls in <dir>/<pid>.json."""
    from torch.optim.optimizer import _global_optimizer_post_hooks

    hooks = dict(_global_optimizer_post_hooks)
    backward = torch.autograd.backward
    try:
        assert run_child(train_three_steps, str(tmp_path)) == "trained"
    finally:  # (in a child these stay until it ends)
        _global_optimizer_post_hooks.clear()
        _global_optimizer_post_hooks.update(hooks)
        torch.autograd.backward = backward
    report = json.loads((tmp_path / f"{os.getpid()}.json").read_text())
    assert report["steps"] == 3 and report["backward"] == 3 and report["done"] is True


def test_targets_are_named_and_torchs_own_workers_left_alone():
    from torch.multiprocessing.spawn import _wrap
    from torch.utils.data._utils.worker import _worker_loop

    assert target_name(train_three_steps, ()) == "train_three_steps() in test_children.py"
    assert target_name(_wrap, (train_three_steps, 0, ())) == "train_three_steps() in test_children.py"
    assert skipped(_worker_loop) and not skipped(train_three_steps)


class Said:
    def __init__(self) -> None:
        self.events: list[dict] = []

    def emit_now(self, kind, **fields):
        self.events.append({"type": kind, **fields})


def children_of(tmp_path, boundaries: int, reports: list[dict]) -> tuple[Children, Said]:
    run = SimpleNamespace(boundaries=0, enabled=True, failed=False)
    said = Said()
    kids = Children(run, said, str(tmp_path))
    for pid in (101, 102):
        process = SimpleNamespace(pid=pid, _popen=SimpleNamespace(method="spawn"))
        kids.said_started(process, "train() in train.py")
    tmp_path.mkdir(exist_ok=True)
    for report in reports:
        (tmp_path / f"{report['pid']}.json").write_text(json.dumps(report))
    run.boundaries = boundaries
    return kids, said


def test_a_script_that_never_stepped_while_its_children_trained_ends_with_one_line(tmp_path):
    kids, said = children_of(tmp_path, 0, [{"pid": 101, "steps": 160, "backward": 160},
                                           {"pid": 102, "steps": 160, "backward": 160}])
    (note,) = said.events  # said once, as the first child started
    assert note["children"] and note["note"] and "train() in train.py, started with multiprocessing spawn" \
        in note["text"]
    text, fields = kids.answer()
    assert text.startswith("the script's training ran in 2 child processes (train() in train.py, started "
                           "with multiprocessing spawn), which tuimon does not hook: they made 320 "
                           "optimizer steps (320 backward() calls), none of them measured")
    assert fields == {"children": 2, "child_steps": 320, "untimed": "children"}


def test_children_without_a_count_and_a_script_that_stepped_too(tmp_path):
    kids, _ = children_of(tmp_path / "a", 0, [])
    text, fields = kids.answer()
    assert text.startswith("the script never stepped an optimizer in its own process and started 2 child")
    assert fields["untimed"] == "children" and fields["child_steps"] is None
    kids, _ = children_of(tmp_path / "b", 50, [{"pid": 101, "steps": 7, "backward": 7}])
    text, fields = kids.answer()
    assert "untimed" not in fields and text.startswith("beside the script's own steps, 2 child processes")


def test_the_verdict_says_the_one_line_not_a_warm_up():
    line = ("the script's training ran in 2 child processes (train() in train.py, started with "
            "multiprocessing spawn), which tuimon does not hook: nothing can be measured here")
    evs = []
    for run, mode in (("eager-script", "eager"), ("default-script", "default")):
        one = run_events(run, mode, "script", [])
        one.insert(-1, events.make(events.WARNING, run, text=line, untimed="children", children=2))
        evs += one
    s = summarize(evs)
    assert s.verdict.kind == "none"
    assert verdict_line(s.verdict) == ("Verdict: no answer: eager/script, the reference, measured nothing: "
                                       f"{line}")
    assert "warm-up" not in json.dumps(disqualified(s.verdict))
