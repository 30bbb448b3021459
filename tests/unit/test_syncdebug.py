"""The sync guard (runner/syncdebug.py, TUIMON_SYNC_DEBUG) without a GPU: a fake torch.cuda
records the sync debug mode, and the real training loop runs on CPU with the guard on, so where
the loop switches the mode is checked here; tests/e2e/test_cuda_syncs.py runs it for real on a GPU."""

from __future__ import annotations

import time

import pytest
import torch
from test_profiling import ListEmitter

from tuimon import events
from tuimon.recipe import Recipe
from tuimon.runner import recipe_loop
from tuimon.runner.profiling import Options, Profiler
from tuimon.runner.syncdebug import ENV, SyncGuard
from tuimon.runner.trainer import Trainer


class FakeCuda:
    """get_sync_debug_mode / set_sync_debug_mode, as torch.cuda has them (modes as ints)."""

    def __init__(self, mode: int = 0) -> None:
        self.mode = mode
        self.calls: list[int] = []

    def get_sync_debug_mode(self) -> int:
        return self.mode

    def set_sync_debug_mode(self, mode: int) -> None:
        self.calls.append(mode)
        self.mode = mode


def test_the_guard_sets_its_level_and_gives_back_the_mode_it_found():
    fake = FakeCuda(mode=1)  # e.g. a recipe set "warn" for itself
    guard = SyncGuard.from_env(fake, {ENV: "error"})
    assert guard.on and guard.level == "error" and fake.calls == []
    guard.ours()
    assert fake.mode == 2
    guard.theirs()
    assert fake.mode == 1
    guard.ours()
    guard.restore()
    assert fake.calls == [2, 1, 2, 1]
    SyncGuard(fake, "warn").ours()
    assert fake.mode == 1 and fake.calls[-1] == 1


def test_the_guard_is_off_without_the_variable_or_without_cuda():
    fake = FakeCuda()
    for guard in (SyncGuard.from_env(fake, {}), SyncGuard.from_env(fake, {ENV: ""}),
                  SyncGuard.from_env(None, {ENV: "error"})):  # a CPU run: nothing to check
        guard.ours()
        guard.theirs()
        guard.restore()
        assert not guard.on
    assert fake.calls == []
    with pytest.raises(ValueError, match=f"{ENV} must be one of warn, error, got 'yes'"):
        SyncGuard.from_env(fake, {ENV: "yes"})


class SpyProfiler(Profiler):
    """The real profiler; notes the mode whenever a step ends inside a capture (where it syncs)."""

    def __init__(self, fake: FakeCuda, **kwargs) -> None:
        super().__init__(**kwargs)
        self.fake = fake
        self.modes: dict[int, int] = {}

    def after_step(self, i: int, compiles: int = 0):
        if self.capture is not None:
            self.modes[i] = self.fake.mode
        return super().after_step(i, compiles)


def test_the_loop_checks_its_own_work_not_the_recipes_step_nor_a_capture():
    fake = FakeCuda(mode=0)
    forward_modes: list[int] = []
    model = torch.nn.Linear(8, 2)

    def forward_loss(m, x, y):
        forward_modes.append(fake.mode)
        return torch.nn.functional.cross_entropy(m(x), y)

    recipe = Recipe(model, torch.optim.SGD(model.parameters(), lr=0.1), None,
                    [(torch.randn(4, 8), torch.randint(0, 2, (4,)))], forward_loss=forward_loss)
    trainer = Trainer(recipe, "cpu")
    emitted: list[tuple[dict, int]] = []

    class Spy(ListEmitter):
        def emit(self, type_: str, **fields) -> None:
            super().emit(type_, **fields)
            emitted.append((self._buffer[-1], fake.mode))

        def flush_due(self) -> bool:
            return True  # hand over every step at once: each step event shows the mode after it

    profiler = SpyProfiler(fake, device_type="cpu", model=model, compiled=False,
                           defaults=Options(0, 1, 2, False), at_step=5)
    emitter = Spy()
    started = time.monotonic()
    assert recipe_loop.train_steps(trainer, emitter, 12, profiler=profiler,
                                   guard=SyncGuard(fake, "error")) == "steps"
    assert time.monotonic() - started < 60

    assert forward_modes == [0] * 12  # the recipe's step: the mode it found
    assert profiler.modes and set(profiler.modes.values()) == {0}  # a capture ends with a sync
    checked = {e["i"] for e, mode in emitted if e["type"] == events.STEP and mode == 2}
    assert checked == set(range(12))  # every step's bookkeeping, a recorded one's too
    assert fake.mode == 0  # restored when the loop ends
    warning = next(e for e, _ in emitted if e["type"] == events.WARNING)
    assert warning["text"].startswith(f"{ENV}=error: ")
    assert [e["state"] for e, _ in emitted if e["type"] == events.PROFILE] == ["started", "done"]
