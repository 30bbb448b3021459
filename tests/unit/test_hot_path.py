"""The runner's hot path (issue 18): what the loop does per step, held without timing anything.

bench/hot_path.py measures the cost (µs per step); these tests pin what makes it cheap: step
events built and encoded only at a flush, and the same events as the dict path; a bounded,
small number of calls per step; CUDA events pooled, not created per step.
"""

from __future__ import annotations

import json
import math
import sys

import pytest
import torch
from test_profiling import ListEmitter
from test_units import FakeCuda, FakeEvent

from tuimon import events
from tuimon.recipe import Recipe
from tuimon.runner import engine as engine_mod
from tuimon.runner import recipe_loop
from tuimon.runner.emitter import Emitter
from tuimon.runner.timing import CudaClock
from tuimon.runner.trainer import Trainer


def dict_line(run: str, **fields) -> str:
    return events.encode(events.make(events.STEP, run, **fields))


@pytest.mark.parametrize("fields", [
    dict(i=0, t=1763800000.123456, ms=1.2346, data_ms=0.0123, n=32, loss=2.302585, phase="warmup"),
    dict(i=7, t=1763800001.5, ms=10.0, data_ms=0.0, n=1, loss=None, phase="steady"),
    dict(i=8, t=1763800002.25, ms=3.0, data_ms=0.5, n=4, loss=1e-30, phase="steady",
         compile_ms=812.125, profiled=2),
    dict(i=9, t=1763800002.25, ms=3, data_ms=0.5, n=4, loss=-0.0, phase="steady"),
    dict(i=10, t=1763800003.0, ms=3.5, data_ms=0.5, n=4, loss=0.25, phase="steady", mem=1),
])
def test_a_step_line_is_the_line_of_its_event(fields, tmp_path):
    for run in ("eager-fp32", "ünïcode \"run\""):
        with open(tmp_path / "out", "wb+") as f:
            emitter = Emitter(f.fileno(), run)
            emitter.emit_step(**fields)
            assert all(type(e) is str for e in emitter._buffer)  # encoded at once, no dict
            emitter.flush()
            f.seek(0)
            assert f.read().decode() == dict_line(run, **fields)


@pytest.mark.parametrize("odd", [dict(loss=math.nan), dict(loss=-math.inf), dict(n=True),
                                 dict(ms=math.inf), dict(phase='we"ird'), dict(profiled="x")])
def test_odd_values_take_the_dict_path_and_encode_as_before(odd, tmp_path):
    fields = dict(i=3, t=1763800000.5, ms=1.5, data_ms=0.25, n=2, loss=0.5, phase="steady") | odd
    with open(tmp_path / "out", "wb+") as f:
        emitter = Emitter(f.fileno(), "r")
        emitter.emit_step(**fields)
        assert all(type(e) is dict for e in emitter._buffer)
        emitter.flush()
        f.seek(0)
        assert f.read().decode() == dict_line("r", **fields)  # NaN and inf: null


def tiny_trainer(step=None) -> Trainer:
    torch.manual_seed(0)
    model = torch.nn.Linear(8, 2)
    batches = [(torch.randn(4, 8), torch.randint(0, 2, (4,))) for _ in range(3)]
    recipe = Recipe(model, torch.optim.SGD(model.parameters(), lr=0.1), torch.nn.CrossEntropyLoss(),
                    batches)
    trainer = Trainer(recipe, "cpu")
    if step is not None:
        trainer.step = step
    return trainer


def test_the_loop_sends_the_same_events_through_lines_and_through_dicts(tmp_path):
    """The runner's Emitter (step lines written at a flush) and a spy that keeps dicts (step
    events through emit) get the same events: types in order, fields in order, same values but
    the clocks'."""
    with open(tmp_path / "events", "wb+") as f:
        emitter = Emitter(f.fileno(), "t", interval=0.0)  # a flush at every step boundary
        recipe_loop.train_steps(tiny_trainer(), emitter, 40, 3)
        f.seek(0)
        lines = [json.loads(line) for line in f.read().decode().splitlines()]
    spy = ListEmitter()
    spy.interval = 0.0
    recipe_loop.train_steps(tiny_trainer(), spy, 40, 3)
    dicts = [json.loads(events.encode(e)) for e in spy.events]
    assert [e["type"] for e in lines] == [e["type"] for e in dicts]
    # minflt: the process's page faults so far; seconds: the run's (finished), a gc's pauses;
    # collections: the garbage collector's runs (gc)
    clocks = {"t", "ms", "data_ms", "peak_rss", "minflt", "ph", "seconds", "collections", "oldest"}
    for a, b in zip(lines, dicts, strict=True):
        assert list(a) == list(b)
        assert {k: v for k, v in a.items() if k not in clocks} == {
            k: v for k, v in b.items() if k not in clocks}
    steps = [e for e in lines if e["type"] == events.STEP]
    assert [e["i"] for e in steps] == list(range(40))
    assert [e["phase"] for e in steps] == ["warmup"] * 3 + ["steady"] * 37
    assert all(e["n"] == 4 and e["loss"] > 0 and e["ms"] > 0 for e in steps)


def test_a_full_ring_flushes_and_loses_no_step(monkeypatch):
    monkeypatch.setattr(engine_mod, "RING", 16)
    emitter = ListEmitter()
    emitter.interval = 1e9  # never due by the clock: only the full ring flushes
    loss = torch.zeros(())
    recipe_loop.train_steps(tiny_trainer(step=lambda batch: loss), emitter, 100, 3)
    steps = [e for e in emitter.events if e["type"] == events.STEP]
    assert [e["i"] for e in steps] == list(range(100))
    memory = [n for n, e in enumerate(emitter.events) if e["type"] == events.MEMORY]
    assert len(memory) >= 100 // 16  # one per flush


def test_a_step_costs_a_bounded_number_of_calls_and_builds_no_event():
    """Counted with sys.setprofile over steps between two flushes (no clock involved): a
    regression that builds or encodes an event per step, or adds work, shows up here."""
    loss = torch.zeros(())
    counts: dict[str, int] = {}

    def calls(n_steps: int) -> int:
        emitter = Emitter(None, "t", interval=1e9)  # steps stay in the ring until the end
        trainer = tiny_trainer(step=lambda batch: loss)
        seen = [0]
        counts.clear()

        def hook(frame, event, arg):
            if event in ("call", "c_call"):
                seen[0] += 1
                name = frame.f_code.co_name if event == "call" else getattr(arg, "__name__", "?")
                counts[name] = counts.get(name, 0) + 1

        sys.setprofile(hook)
        try:
            recipe_loop.train_steps(trainer, emitter, n_steps, 3)
        finally:
            sys.setprofile(None)
        return seen[0]

    short = calls(100)
    short_counts = dict(counts)
    long = calls(1100)
    per_step = (long - short) / 1000
    # The end of the run builds each step's line once (emit_step): that is the flush's work.
    assert counts["emit_step"] == 1100 and short_counts["emit_step"] == 100
    for name in ("make", "encode", "dumps", "flush", "peak_memory"):  # the run's few other events
        more = counts.get(name, 0) - short_counts.get(name, 0)  # not one more per step: a gc
        assert more <= 3 * (1100 // 256), (name, more)  # event every 256 (runner/gc_pauses.py)
    assert per_step <= 30, (per_step, sorted(counts.items(), key=lambda kv: -kv[1])[:20])


def test_the_cuda_clock_records_its_events_again_instead_of_making_new_ones():
    FakeEvent.recorded, FakeEvent.completed_upto, FakeEvent.syncs = [], -1, 0
    made = []

    class CountingCuda(FakeCuda):
        @staticmethod
        def Event(enable_timing=False):
            made.append(1)
            return FakeEvent(enable_timing)

    clock = CudaClock(CountingCuda)
    times = []
    for _ in range(50):
        for _ in range(4):
            clock.start()
            clock.stop()
        FakeEvent.completed_upto = len(FakeEvent.recorded) - 1  # the GPU caught up
        times += clock.ready()
    assert times == [2.5] * 200 and FakeEvent.syncs == 0
    assert len(made) <= 10  # the first few steps' events, recorded again ever after
