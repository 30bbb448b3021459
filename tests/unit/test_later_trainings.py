"""A training after the first (a new model, a new lead optimizer: simplest_kd's seven) has its
module found with no global hook (runner/script/holder.py): a hook added or removed then
recompiled the models compiled already, and one run under a compiled module's call was compiled
as a frame of its own, doing nothing, so the new model's forward was never timed."""

from __future__ import annotations

import torch
from torch import nn

from tuimon.runner.emitter import Emitter
from tuimon.runner.global_hooks import GlobalHook
from tuimon.runner.phases import Timeline
from tuimon.runner.script.anatomy import Anatomy
from tuimon.runner.script.compile_modes import CompileModes
from tuimon.runner.script.holder import holder
from tuimon.runner.script.lead import Lead
from tuimon.runner.script.phases import ForwardTimer


class Student(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Linear(4, 8), nn.ReLU())
        self.head = nn.Linear(8, 2)

    def forward(self, x):
        return self.head(self.body(x))


class Pair(nn.Module):  # a container holding a teacher and a student
    def __init__(self, student) -> None:
        super().__init__()
        self.teacher, self.student = nn.Linear(4, 2), student


def _hooks() -> list:
    return list(nn.modules.module._global_forward_pre_hooks)


def test_the_tightest_module_holding_an_optimizers_parameters_is_found_outermost_wrapper_first():
    student = Student()
    pair = Pair(student)
    params = {id(p) for p in student.parameters()}
    assert holder(params) is student  # not the container that holds the teacher too
    wrapped = torch.compile(student, backend="eager")  # what the script calls
    assert holder(params) is wrapped
    assert holder(params, [pair]) is pair  # a compiled module holding them is taken first
    assert holder({id(p) for p in [*pair.teacher.parameters(), *nn.Linear(2, 2).parameters()]}) is None
    assert holder(set()) is None


def test_a_later_trainings_module_is_found_and_compiled_without_a_global_hook():
    said, anatomy = [], Anatomy(Emitter(None, "r"), Lead(lambda text, **f: None))
    modes = CompileModes("default", True, lambda text, **fields: said.append(text), anatomy=anatomy)
    modes._orig_compile = lambda fn, **kw: fn  # compiled "in place": the slot is filled
    first = Student()
    opt = torch.optim.SGD(first.parameters(), lr=0.1)
    anatomy.made(opt)
    modes.optimizer_made(opt)
    first(torch.randn(2, 4))  # the first training's: found by the hook, as ever
    modes.trained.first_step(optimizers=1)
    assert first._compiled_call_impl is not None
    before = _hooks()
    second = Student()
    opt2 = torch.optim.SGD(second.parameters(), lr=0.1)
    anatomy.made(opt2)
    modes.optimizer_made(opt2)
    assert _hooks() == before  # made after the first step: no hook
    modes.trained.retarget(opt2)  # the new lead, as its first step() ends
    assert _hooks() == before
    assert modes.trained.module_of(opt2) is second and second._compiled_call_impl is not None
    rows = [o.row() for o in anatomy.optimizers]
    assert [(r["module"], r["compiled"]) for r in rows] == [("Student", "tuimon"), ("Student", "tuimon")]


def test_the_forward_timer_times_a_later_trainings_module_with_no_hook():
    timeline, notes = Timeline(), []
    timer = ForwardTimer(timeline, notes.append)
    first, second = Student(), Student()
    opt = torch.optim.SGD(first.parameters(), lr=0.1)
    timer.optimizer_made(opt)
    first(torch.randn(2, 4))
    assert timer.module is first
    timer.give_up()  # the first step ended (found: nothing said)
    opt2 = torch.optim.SGD(second.parameters(), lr=0.1)
    before = _hooks()
    timer.optimizer_made(opt2)
    timer.retarget(opt2, second)
    assert _hooks() == before and timer.module is second
    assert second._compiled_call_impl is timer.wrapper and first._compiled_call_impl is None
    third = torch.optim.SGD(nn.Linear(2, 2).parameters(), lr=0.1)
    timer.retarget(third, None)  # no module holds them: said, no hook
    assert _hooks() == before and timer.module is None
    assert notes and notes[-1].startswith("forward is not split out")


def test_a_hook_run_under_a_compiled_modules_call_runs_eager_not_compiled_as_a_frame():
    """Module.compile's call runs torch's _call_impl untraced, and it calls the global hooks: a
    hook Dynamo compiled there read is_compiling() True and never saw the module."""
    model = Student()
    model.compile(backend="eager")
    seen = []

    def found(module, args):  # as tuimon's hooks are: a no-op inside a compiled frame
        if not torch.compiler.is_compiling():
            seen.append(type(module).__name__)

    hook = GlobalHook(found)
    try:
        model(torch.randn(2, 4))
    finally:
        hook.remove()
    assert seen == ["Student"]  # the compiled forward inlines its children's: no-ops there
