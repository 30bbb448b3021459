"""Issue 25, child side: every step split into data, forward, backward, optimizer (and other),
for recipes (the loop's own marks) and scripts (the hooks' timeline), on a fake clock and on
real runs; on CUDA through events read later (a fake GPU here; tests/e2e/test_cuda_syncs.py on a
real one)."""

from __future__ import annotations

import json
import math
import statistics
import sys
import time

import pytest
import torch
from conftest import SCRIPTS
from test_end_to_end import runs_of
from test_profiling import ListEmitter
from test_profiling import one_thread as one_thread  # noqa: PLC0414 - a fixture, used by name
from test_units import FakeCuda, FakeEvent

from tuimon import events
from tuimon.recipe import Recipe
from tuimon.runner import phases as phases_mod
from tuimon.runner import recipe_loop
from tuimon.runner.emitter import Emitter, ph_us
from tuimon.runner.phases import BACKWARD, DATA, FORWARD, OPTIMIZER, Timeline
from tuimon.runner.script.phases import ForwardTimer
from tuimon.runner.timing import CudaClock
from tuimon.runner.trainer import Trainer

PY = sys.executable


class FakeClock:
    """time.perf_counter that moves only when told (seconds)."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, ms: float) -> None:
        self.now += ms / 1000.0


@pytest.fixture
def clock(monkeypatch):
    fake = FakeClock()
    monkeypatch.setattr(time, "perf_counter", fake)
    return fake


# ---- scripts' timeline ------------------------------------------------------------------------

def test_the_timeline_gives_each_stretch_to_the_part_open_then(clock):
    tl = Timeline()
    tl.begin()
    clock.advance(1)  # other: before the batch
    tl.enter(DATA)
    clock.advance(2)
    tl.leave()
    clock.advance(0.5)  # other: zero_grad, the batch to the device
    tl.enter(FORWARD)
    clock.advance(6)
    tl.leave()
    tl.enter(BACKWARD)
    clock.advance(9)
    tl.leave()
    tl.enter(OPTIMIZER)
    clock.advance(3)
    tl.leave()
    clock.advance(0.25)
    assert tl.end() == pytest.approx((2.0, 6.0, 9.0, 3.0))
    assert tl.acc == [0.0] * (phases_mod.OTHER + 1)  # the next step starts from zero


def test_nested_parts_count_as_the_innermost_a_closure_optimizer(clock):
    """LBFGS-style: step(closure) runs forward and backward inside the optimizer's step."""
    tl = Timeline()
    tl.begin()
    tl.enter(OPTIMIZER)
    clock.advance(1)
    tl.enter(FORWARD)
    clock.advance(4)
    tl.leave()
    tl.enter(BACKWARD)
    clock.advance(5)
    tl.leave()
    clock.advance(2)  # the optimizer's own work after the closure
    tl.leave()
    ph = tl.end()
    assert ph[1:] == pytest.approx((4.0, 5.0, 3.0))
    assert ph[0] is None  # no DataLoader batch seen: data is not a guess of zero


def test_parts_never_seen_are_none_and_a_part_left_open_is_closed_by_the_next_step(clock):
    tl = Timeline()
    tl.begin()
    tl.enter(BACKWARD)
    clock.advance(3)
    tl.leave()
    assert tl.end() == pytest.approx((None, None, 3.0, None))
    tl.begin()
    tl.enter(FORWARD)  # an exception inside forward: its end is never heard
    clock.advance(2)
    tl.begin()  # the next step
    assert tl.cur == phases_mod.OTHER and not tl.stack
    clock.advance(1)
    assert tl.end() == (None, None, 0.0, None)  # backward: seen before, none this step


# ---- recipes: the loop's marks -----------------------------------------------------------------

class _SlowBackward(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, g):
        time.perf_counter.advance(3.0)
        return g


class _TimedSGD(torch.optim.SGD):
    def step(self, closure=None):
        time.perf_counter.advance(1.5)
        return super().step(closure)


class _Batches:
    def __init__(self, batches):
        self.batches = batches

    def __iter__(self):
        for b in self.batches:
            time.perf_counter.advance(0.5)
            yield b


def fake_clock_recipe() -> Recipe:
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 2)

    def forward_loss(model, x, y):
        time.perf_counter.advance(2.0)
        return torch.nn.functional.mse_loss(_SlowBackward.apply(model(x)), y)

    batches = [(torch.randn(3, 4), torch.randn(3, 2)) for _ in range(4)]
    return Recipe(model, _TimedSGD(model.parameters(), lr=0.01), None, _Batches(batches),
                  forward_loss=forward_loss)


def test_the_loop_splits_each_step_exactly_on_a_fake_clock(clock):
    emitter = ListEmitter()
    recipe_loop.train_steps(Trainer(fake_clock_recipe(), "cpu"), emitter, 12, 2)
    steps = [e for e in emitter.events if e["type"] == events.STEP]
    assert len(steps) == 12
    for s in steps:
        assert s["ph"] == [500, 2000, 3000, 1500]  # µs: data, forward, backward, optimizer
        assert s["ms"] == pytest.approx(7.0)  # nothing else moved the clock: other is 0
        assert s["data_ms"] == pytest.approx(0.5)


def test_a_stand_in_step_that_marks_nothing_has_no_split():
    from test_hot_path import tiny_trainer

    emitter = ListEmitter()
    loss = torch.zeros(())
    recipe_loop.train_steps(tiny_trainer(step=lambda batch: loss), emitter, 10, 3)
    steps = [e for e in emitter.events if e["type"] == events.STEP]
    assert steps and all("ph" not in s for s in steps)


def sleepy_recipe(ms: float) -> Recipe:
    torch.manual_seed(0)
    model = torch.nn.Linear(16, 4)

    def forward_loss(model, x, y):
        time.sleep(ms / 1000.0)
        return torch.nn.functional.cross_entropy(model(x), y)

    batches = [(torch.randn(8, 16), torch.randint(0, 4, (8,))) for _ in range(4)]
    return Recipe(model, torch.optim.SGD(model.parameters(), lr=0.01), None, batches,
                  forward_loss=forward_loss)


def test_a_real_recipes_phases_sum_to_its_step_within_a_few_percent():
    emitter = ListEmitter()
    recipe_loop.train_steps(Trainer(sleepy_recipe(4.0), "cpu"), emitter, 40, 5)
    steps = [e for e in emitter.events if e["type"] == events.STEP and e["phase"] == "steady"]
    assert len(steps) == 35
    assert all(len(s["ph"]) == 4 and None not in s["ph"] for s in steps)
    share = statistics.median(sum(s["ph"]) / 1000.0 / s["ms"] for s in steps)
    assert 0.95 <= share <= 1.0001, share  # "other": the loss read and the loop's own clock reads
    assert statistics.median(s["ph"][1] for s in steps) >= 4000  # the 4 ms sleep is forward's


# ---- CUDA: marks as events, read later ----------------------------------------------------------

def test_the_cuda_clock_splits_steps_from_events_without_a_sync():
    FakeEvent.recorded, FakeEvent.completed_upto, FakeEvent.syncs = [], -1, 0
    col = [None] * 8
    clock = CudaClock(FakeCuda, ph_col=col, mask=7)
    for step in range(3):
        clock.start()  # every event lands 2.5 ms after the one before (FakeEvent)
        if step == 2:
            clock.stop()  # a profiled step: no marks, no split
            continue
        for _ in range(4):
            clock.mark()  # data, forward, backward, optimizer, in order
        clock.stop(unseen=(0,) if step == 1 else ())
    assert clock.ready() == [] and col == [None] * 8  # nothing done on the GPU yet: nothing read
    FakeEvent.completed_upto = len(FakeEvent.recorded)
    assert clock.ready() == [12.5, 12.5, 2.5]
    assert col[0] == (2.5, 2.5, 2.5, 2.5)  # other: the last 2.5 ms
    assert col[1] == (None, 2.5, 2.5, 2.5)  # a part the step could not see
    assert col[2] is None
    assert FakeEvent.syncs == 0
    made = len({id(e) for e in FakeEvent.recorded})
    for _ in range(5):  # read events are recorded again: no new ones a step
        clock.start()
        for _ in range(4):
            clock.mark()
        clock.stop()
        FakeEvent.completed_upto = len(FakeEvent.recorded)
        clock.ready()
    assert len({id(e) for e in FakeEvent.recorded}) == made


def test_the_cuda_clock_takes_a_scripts_tagged_marks():
    FakeEvent.recorded, FakeEvent.completed_upto, FakeEvent.syncs = [], -1, 0
    col = [None] * 4
    clock = CudaClock(FakeCuda, ph_col=col, mask=3)
    clock.start()
    clock.mark(phases_mod.OTHER)  # other, then data
    clock.mark(DATA)
    clock.mark(FORWARD)
    clock.mark(BACKWARD)
    clock.mark(FORWARD)  # a second forward (gradient accumulation) adds up
    clock.stop(unseen=(OPTIMIZER,))
    FakeEvent.completed_upto = len(FakeEvent.recorded)
    assert clock.ready() == [15.0]
    assert col[0] == (2.5, 5.0, 2.5, None)


# ---- the event ---------------------------------------------------------------------------------

@pytest.mark.parametrize("ph", [(0.0123, 1.2346, 2.5, 0.0004), (None, 1.0, 2.0, None),
                                (0.5, math.nan, 1.0, 1.0), (0.5, math.inf, 1.0, 1.0),
                                (0.5, 1.0, 2.0, 0.25, 3.5)])  # the last with eval
def test_a_step_line_with_phases_is_the_line_of_its_event(ph, tmp_path):
    fields = dict(i=3, t=1763800000.5, ms=4.0, data_ms=0.0123, n=8, loss=0.5, phase="steady", ph=ph)
    with open(tmp_path / "out", "wb+") as f:
        emitter = Emitter(f.fileno(), "r")
        emitter.emit_step(**fields)
        emitter.flush()
        f.seek(0)
        line = f.read().decode()
    expected = events.encode(events.make(events.STEP, "r", **(fields | {"ph": ph_us(ph)})))
    assert line == expected
    assert json.loads(line)["ph"] == [None if v is None or not math.isfinite(v)
                                      else int(v * 1000 + 0.5) for v in ph]


# ---- scripts: the trained module's forward, wrapped outside compiled frames --------------------

def _model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))


@pytest.mark.parametrize("how", ["eager", "compile in place first", "torch.compile first",
                                 "torch.compile after the optimizer", "compile in place later"])
def test_the_forward_timer_times_the_trained_module_without_breaking_its_graph(how, tmp_path,
                                                                               inductor_cache, monkeypatch):
    import torch._dynamo as dyn
    from torch._dynamo.utils import counters

    from tuimon.runner.script.compile_modes import CompileModes

    # The suite's Inductor cache: the five cases compile the same graph, and what is checked is
    # Dynamo's (graph breaks, frames), which runs again whether Inductor's cache hits or not.
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(inductor_cache))
    dyn.reset()
    counters.clear()
    notes: list[str] = []
    modes = CompileModes("eager" if how == "eager" else "default", False,
                         lambda text, **fields: notes.append(text))
    modes.install()
    tl = Timeline()
    timer = modes.listener = ForwardTimer(tl, notes.append)
    try:
        m = f = _model()
        if how == "compile in place first":
            m.compile()
        elif how == "torch.compile first":
            f = torch.compile(m)
        opt = torch.optim.SGD(m.parameters(), lr=0.1)
        timer.optimizer_made(opt)
        if how == "torch.compile after the optimizer":
            f = torch.compile(m)
        x = torch.randn(4, 8)
        fwd = []
        for i in range(4):
            if how == "compile in place later" and i == 1:
                m.compile()
            tl.begin()
            f(x).sum().backward()
            opt.step()
            opt.zero_grad()
            fwd.append(tl.end()[FORWARD])
            timer.check()
        assert all(v is not None and v > 0 for v in fwd[2:]), fwd
        assert sum(counters["graph_break"].values()) == 0, dict(counters["graph_break"])
        assert counters["stats"]["unique_graphs"] == (0 if how == "eager" else 1)
        assert not notes or how != "eager"
        # A saved model carries no wrapper (torch drops the slot when pickling).
        torch.save(m, tmp_path / "m.pt")
    finally:
        torch.compile, torch.nn.Module.compile = modes._orig_compile, modes._orig_module_compile
        timer._disarm()


# ---- scripts: real runs ------------------------------------------------------------------------

def _steady(kinds: dict) -> list[dict]:
    return [s for s in kinds["step"] if s["phase"] == "steady" and not s.get("compile_ms")
            and not s.get("gap")]


def test_a_scripts_steps_say_their_parts_eager_and_auto_compiled(tuimon):
    proc, session = tuimon("run", "--headless", "--modes", "eager,default", "--steps", "40", "--",
                           PY, str(SCRIPTS / "slow_data.py"), "--item-ms", "0.1")
    assert proc.returncode == 0, proc.stderr
    _, runs = runs_of(session)
    for run, kinds in runs.items():
        steady = _steady(kinds)
        assert len(steady) > 20, run
        assert all(None not in s["ph"] for s in steady), run
        # data: 32 items of 0.1 ms each, at least
        assert statistics.median(s["ph"][0] for s in steady) >= 3200, run
        share = statistics.median(sum(s["ph"]) / 1000.0 / s["ms"] for s in steady)
        assert share >= 0.9, (run, share)
        log = (session / "logs" / f"{run}.log").read_text()
        assert "global hooks" not in log  # torch's warning about global hooks: none left armed
    assert "graph_break" not in runs["default-script"]  # the forward timer is outside the graph


def test_each_part_of_a_scripts_step_reads_its_own_time_a_closures_taken_out(tuimon):
    """The hooks' CPU spans on a real script whose parts spin known times, LBFGS-style: forward
    and backward run inside optimizer.step(closure), and count as themselves, the optimizer
    keeping only its own work; the parts sum to the step."""
    want = {"data": 2.0, "forward": 3.0, "backward": 4.0, "optimizer": 1.5}
    proc, session = tuimon("run", "--headless", "--modes", "eager", "--", PY,
                           str(SCRIPTS / "closure_step.py"), "--steps", "40",
                           *(x for part, ms in want.items() for x in (f"--{part}-ms", str(ms))))
    assert proc.returncode == 0, proc.stderr
    steady = _steady(runs_of(session)[1]["eager-script"])
    assert len(steady) >= 15
    for k, (part, ms) in enumerate(want.items()):
        got = statistics.median(s["ph"][k] for s in steady) / 1000.0
        assert ms <= got <= ms * 1.25 + 0.3, (part, got)  # spins: never less, a little more
    share = statistics.median(sum(s["ph"]) / 1000.0 / s["ms"] for s in steady)
    assert 0.95 <= share <= 1.0, share


def test_a_script_that_compiles_its_own_model_is_split_too(tuimon):
    proc, session = tuimon("run", "--headless", "--modes", "default", "--steps", "30", "--",
                           PY, str(SCRIPTS / "compiled.py"))
    assert proc.returncode == 0, proc.stderr
    kinds = runs_of(session)[1]["default-script"]
    assert all(None not in s["ph"] for s in _steady(kinds))
    assert "graph_break" not in kinds and "recompile" not in kinds
    assert "global hooks" not in (session / "logs" / "default-script.log").read_text()


def test_parts_a_script_does_not_show_are_none_and_said(tuimon):
    """A hand-rolled optimizer (not torch.optim), batches indexed by hand: only backward shows."""
    proc, session = tuimon("run", "--headless", "--modes", "eager", "--steps", "20", "--",
                           PY, str(SCRIPTS / "custom_optimizer.py"))
    assert proc.returncode == 0, proc.stderr
    kinds = runs_of(session)[1]["eager-script"]
    steady = _steady(kinds)
    assert steady and all(s["ph"][0] is None and s["ph"][1] is None and s["ph"][3] is None
                          and s["ph"][2] > 0 for s in steady)


@pytest.mark.usefixtures("one_thread")
def test_a_captured_steps_phases_sit_beside_the_captures_own_split():
    """The steps a profiler capture records carry their phases too (marked as every step is),
    and they agree with the capture's labels of the same steps (bench/phase_agreement.py)."""
    from test_profiling import TINY, build, of, train

    evs, _ = train(build(TINY, batch_size=32), 60, at=20, window=(1, 1, 8))
    (done,) = of(evs, events.PROFILE, state="done")
    steps = [s for s in of(evs, events.STEP) if s.get("profiled") and s["i"] in
             range(done["active_steps"][0], done["active_steps"][-1] + 1)]
    assert len(steps) == 8 and all(None not in s["ph"] for s in steps)
    for k, part in enumerate(("forward", "backward", "optimizer")):
        mine = statistics.fmean(s["ph"][k + 1] for s in steps) / 1000
        theirs = done["split"][f"{part}_ms"]
        assert mine == pytest.approx(theirs, rel=0.35), (part, mine, theirs)


def test_a_model_and_optimizer_the_script_lets_go_are_freed_and_the_next_pair_leads(tuimon):
    """tuimon's hooks hold the trained module and the lead optimizer weakly: once the script
    lets them go they are freed as without tuimon (held, a DDP model kept its process group alive
    into the interpreter's teardown, where gloo aborted the rank now and then), and the next
    optimizer's steps end steps."""
    proc, session = tuimon("run", "--headless", "--modes", "eager,default", "--", PY,
                           str(SCRIPTS / "two_models.py"))
    assert proc.returncode == 0, proc.stderr
    for run, kinds in runs_of(session)[1].items():
        log = (session / "logs" / f"{run}.log").read_text()
        assert "first model freed: True; its optimizer freed: True" in log, (run, log)
        assert "second training done" in log
        assert len(kinds["step"]) == 60, (run, len(kinds["step"]))  # the second optimizer leads
        assert all(s["ph"][1] > 0 for s in _steady(kinds)[-20:]), run  # its model's forward found
    forwards = [e for e in runs_of(session)[1]["default-script"]["compile"] if e["forward"]]
    assert len(forwards) == 2  # tuimon compiled the second model too, as the first
