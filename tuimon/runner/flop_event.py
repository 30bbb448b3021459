"""The ``flops`` event of a run: one extra step's FLOPs (runner/flops.py) and this machine's
measured GEMM peak (runner/peak_bench.py), said once, before the measured steps of a recipe
(``RecipeFlops``, a component of the step engine: in the run's first turn) or at a warm-up
step boundary of a script (runner/script/flop_catch.py). A count that fails says why and the run
goes on: FLOPs are an answer beside the race, never a reason to lose it."""

from __future__ import annotations

import time

import torch

from tuimon import events
from tuimon.runner import peak_bench
from tuimon.runner.flops import backward_of, count_step, eager_module, random_streams_kept
from tuimon.runner.memory_phases import NEVER


def emit(emitter, device: str, count) -> float:
    """Count (``count()``: count_step's fields), read or measure the peak, say both as one
    ``flops`` event; returns the seconds it took (kept out of a --duration)."""
    t0 = time.monotonic()
    # Inside the user's run: whatever the count (a recipe's fresh DataLoader iterator draws its
    # seeds) and the peak (measured here the first time on a machine) draw, the run's shuffles
    # and dropout go on as if they had not
    with random_streams_kept():
        try:
            fields = count()
        except Exception as exc:  # noqa: BLE001 - said, and the run goes on uncounted
            fields = {"error": f"{type(exc).__name__}: {exc}".splitlines()[0][:300]}
            if device.startswith("cuda"):
                torch.cuda.empty_cache()  # an out-of-memory count: its blocks back before the steps
        try:
            fields["peak"] = peak_bench.peak(torch, device)
        except Exception as exc:  # noqa: BLE001 - no peak: FLOP/s still stand
            fields["peak"] = None
            fields["peak_error"] = f"{type(exc).__name__}: {exc}".splitlines()[0][:300]
    emitter.emit_now(events.FLOPS, **fields)
    return time.monotonic() - t0


def first_batch(batches):
    """A batch to count on, without taking one from the run's own cycle: a list's first, or a
    fresh iterator's first (a DataLoader's: the seeds it draws are put back by ``emit``). A
    one-shot iterator (``iter(b) is b``) gives none: counting would take a batch from the run."""
    if isinstance(batches, (list, tuple)):
        return batches[0] if batches else None
    it = iter(batches)
    if it is batches:
        raise ValueError("the recipe's batches are a one-shot iterator: no batch to spare")
    return next(it)


def recipe_count(trainer, move) -> dict:
    """count_step's fields for a recipe's step: its own forward and loss on the eager model (under
    the run's autocast), ``loss.backward()`` through the engine, its optimizer's eager step."""
    recipe = trainer.recipe
    model = eager_module(recipe.model)
    inputs, targets = move(first_batch(recipe.batches))
    if trainer.channels_last:
        from tuimon.runner.fixes import inputs_channels_last

        inputs = inputs_channels_last(inputs)

    def forward():
        with trainer.autocast():
            if recipe.forward_loss is not None:
                return recipe.forward_loss(model, inputs, targets)
            return recipe.loss_fn(model(inputs), targets)

    return count_step(model, recipe.optimizer, forward, backward_of,
                      on_cuda=trainer.device_type == "cuda")


class RecipeFlops:
    """The step engine's component (runner/engine.py) that counts a recipe's step once, before
    its first step, in its first turn (its neighbours wait then); its seconds are no
    --duration's."""

    due = 0

    def __init__(self, trainer) -> None:
        self.trainer = trainer

    def start(self, engine) -> None:
        pass

    def boundary(self, engine, i: int) -> None:
        from tuimon.runner.steps import mover

        self.due = NEVER
        engine.excluded(emit(engine.emitter, engine.device,
                             lambda: recipe_count(self.trainer, mover(engine.device))))

    def end(self, engine) -> None:
        pass
