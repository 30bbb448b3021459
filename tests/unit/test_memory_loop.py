"""The recipe loop's CUDA path with memory per phase, without a GPU: the real step engine on a
real (CPU) model whose forward, backward and optimizer step allocate in a fake CUDA allocator,
its step clock on fake CUDA events. Steps 3 and 4 are read at the trainer's marks, said as
``mem: 1`` and a ``memory_phases`` event; the flush window's peaks survive; nothing syncs; the
sync guard sees the reads as tuimon's work."""

from __future__ import annotations

import types

import torch
from test_memory_phases import FakeAllocator, MiB
from test_units import FakeEvent

from tuimon import events
from tuimon.recipe import Recipe
from tuimon.runner import engine as engine_mod
from tuimon.runner import recipe_loop
from tuimon.runner.compile_watch import CompileWatch
from tuimon.runner.control_lines import ControlLines
from tuimon.runner.emitter import Emitter
from tuimon.runner.engine import StepEngine
from tuimon.runner.memory_phases import MemoryStep
from tuimon.runner.steps import LossReader
from tuimon.runner.syncdebug import SyncGuard
from tuimon.runner.trainer import Trainer
from tuimon.settings import RunSettings


class Collecting(Emitter):
    def __init__(self) -> None:
        super().__init__(None, "eager-fp32")
        self.events: list[dict] = []

    def flush(self) -> None:
        self.events += [events.decode(e) if isinstance(e, str) else e for e in self._buffer]
        self._buffer.clear()

    def flush_due(self) -> bool:
        return True


class Saved(torch.autograd.Function):
    """Activations kept for backward in the fake allocator; backward frees them, leaves grads."""

    fake: FakeAllocator

    @staticmethod
    def forward(ctx, x):
        Saved.fake.alloc(200 * MiB)
        return x.clone()

    @staticmethod
    def backward(ctx, grad):
        Saved.fake.alloc(50 * MiB)  # the gradients
        Saved.fake.free(200 * MiB)
        return grad


class FakeSGD(torch.optim.SGD):
    fake: FakeAllocator

    def step(self, closure=None):
        self.fake.alloc(30 * MiB)
        self.fake.free(30 * MiB)
        return super().step(closure)

    def zero_grad(self, set_to_none: bool = True) -> None:
        if self.fake.current > 300 * MiB:
            self.fake.free(50 * MiB)  # the gradients, set to None
        super().zero_grad(set_to_none)


def test_the_loop_reads_memory_per_phase_on_two_steps_kept_apart(monkeypatch):
    fake = FakeAllocator()
    fake.alloc(300 * MiB)  # weights and optimizer state
    fake.Event = FakeEvent
    fake.current_device = lambda: 0
    FakeEvent.recorded, FakeEvent.completed_upto, FakeEvent.syncs = [], 10**9, 0  # the GPU keeps up
    Saved.fake = FakeSGD.fake = fake
    monkeypatch.setattr(engine_mod, "torch", types.SimpleNamespace(cuda=fake, get_num_threads=lambda: 1))
    monkeypatch.setattr(engine_mod, "LossReader", lambda on_cuda, n: LossReader(False, n))
    monkeypatch.setattr(engine_mod, "device_name", lambda _torch, device: "fake H100")
    monkeypatch.setattr(engine_mod, "versions", lambda _torch: {})
    monkeypatch.setattr(recipe_loop, "mover", lambda device: lambda batch: batch)
    monkeypatch.setattr(engine_mod, "peak_memory", lambda device: {"peak_rss": 1})
    model = torch.nn.Linear(8, 2)
    recipe = Recipe(model, FakeSGD(model.parameters(), lr=0.1), None,
                    [(torch.randn(4, 8), torch.randint(0, 2, (4,)))],
                    forward_loss=lambda m, x, y: torch.nn.functional.cross_entropy(Saved.apply(m(x)), y))
    trainer = Trainer(recipe, "cpu")
    trainer.device, trainer.device_type = "cuda:0", "cuda"  # its loop takes the CUDA path
    emitter = Collecting()
    engine = StepEngine(RunSettings.make(steps=8, warmup="1"), emitter, ControlLines(None), CompileWatch())
    engine.add(MemoryStep(fake, 0, compiled=False))
    engine.open("cuda:0", True, {}, SyncGuard(fake, "error"))
    assert recipe_loop.run(trainer, engine) == "steps"
    engine.finish("steps")

    steps = [e for e in emitter.events if e["type"] == events.STEP]
    assert [e["i"] for e in steps if e.get("mem")] == [3, 4]
    assert all(e.get("ph") for e in steps)  # the clock split them as ever
    (found,) = [e for e in emitter.events if e["type"] == events.MEMORY_PHASES][-1:]
    assert found["steps"] == [3, 4] and found["base"] == 300 * MiB
    assert {k: v["peak"] for k, v in found["phases"].items()} == {
        "forward": 500 * MiB, "backward": 550 * MiB, "optimizer": 380 * MiB}
    windows = [e for e in emitter.events if e["type"] == events.MEMORY and "cuda_peak_allocated" in e]
    assert len(windows) == 2 and windows[0]["cuda_peak_allocated"] == 550 * MiB
    assert FakeEvent.syncs == 0 and fake.syncs == 0  # no wait: the fake GPU kept up, nothing synced
    assert set(fake.read_modes) == {2}  # every read under the guard ("error"): tuimon's work
    assert fake.mode == 0  # the recipe's mode, restored
