"""A script's memory per phase on CUDA, without a GPU: the hooks' side (runner/script/steps.py)
driven as the hooks drive it, the parts marked on the Timeline, with a fake allocator and fake
CUDA events. Steps 3 and 4 read at the parts' marks (data, forward, backward, optimizer), kept
apart; the CUDA-graph pool asked at the end of a compiled variant."""

from __future__ import annotations

import types

from test_memory_loop import Collecting
from test_memory_phases import FakeAllocator, MiB
from test_units import FakeEvent

from tuimon import events
from tuimon.runner import engine as engine_mod
from tuimon.runner import memory_phases
from tuimon.runner.compile_watch import CompileWatch
from tuimon.runner.control_lines import ControlLines
from tuimon.runner.phases import BACKWARD, DATA, FORWARD, OPTIMIZER
from tuimon.runner.script import ending
from tuimon.runner.script import steps as script_steps
from tuimon.runner.steps import LossReader
from tuimon.settings import RunSettings


def test_a_scripts_memory_steps_read_the_parts_its_hooks_mark(monkeypatch):
    fake = FakeAllocator()
    fake.alloc(300 * MiB)
    fake.Event = FakeEvent
    fake.is_available = fake.is_initialized = lambda: True
    fake.current_device = lambda: 0
    FakeEvent.recorded, FakeEvent.completed_upto, FakeEvent.syncs = [], 10**9, 0
    cuda_torch = types.SimpleNamespace(cuda=fake, get_num_threads=lambda: 1)
    monkeypatch.setattr(script_steps, "torch", cuda_torch)
    monkeypatch.setattr(engine_mod, "torch", cuda_torch)
    monkeypatch.setattr(engine_mod, "LossReader", lambda on_cuda, n: LossReader(False, n))
    monkeypatch.setattr(engine_mod, "device_name", lambda _torch, device: "fake H100")
    monkeypatch.setattr(engine_mod, "versions", lambda _torch: {})
    monkeypatch.setattr(engine_mod, "peak_memory", lambda device: {"peak_rss": 1})
    pools = []
    monkeypatch.setattr(memory_phases, "graph_pool", lambda index: pools.append(index) or {"graph_pool": 0})
    emitter = Collecting()
    run = script_steps.ScriptSteps(RunSettings.make(mode="default", precision="script"), emitter,
                                   ControlLines(None), CompileWatch())
    line = run.timeline

    def part(k: int, grow: int, keep: int) -> None:  # a hook's part: grows, keeps some of it
        line.enter(k)
        fake.alloc(grow)
        fake.free(grow - keep)
        line.leave()

    run.boundary()  # the first optimizer step seen: training starts (on "CUDA")
    assert run.engine.on_cuda and run.engine.memory.due == 3
    for _ in range(6):
        part(DATA, 8 * MiB, 8 * MiB)
        part(FORWARD, 240 * MiB, 200 * MiB)
        part(BACKWARD, 250 * MiB, -158 * MiB)  # frees the batch and activations, keeps grads
        part(OPTIMIZER, 30 * MiB, -50 * MiB)  # zero_grad: the grads go
        run.boundary()
    ending.finished(run)
    assert fake.current == 300 * MiB and fake.syncs == 0
    steps = [e for e in emitter.events if e["type"] == events.STEP]
    assert [e["i"] for e in steps if e.get("mem")] == [3, 4]
    found = [e for e in emitter.events if e["type"] == events.MEMORY_PHASES and "phases" in e][-1]
    assert found["steps"] == [3, 4] and found["base"] == 300 * MiB
    assert {k: v["peak"] for k, v in found["phases"].items()} == {
        "other": 508 * MiB, "data": 308 * MiB, "forward": 548 * MiB, "backward": 758 * MiB,
        "optimizer": 380 * MiB}  # other: between the hooks' parts (the activations held then)
    assert run.timeline.mark == run.engine.clock.mark  # the clock's own marks after the memory steps
    assert pools == [0]  # a compiled variant's end asks for the graph pool once
    assert run.engine.memory.due == memory_phases.NEVER
