"""The steps between a loop and its events: the batch hand-over, the loss capture, and the
ring of measured steps that become ``step`` events at a flush (runner/engine.py drives them;
bench/hot_path.py measures their cost per step, issue 18)."""

from __future__ import annotations

import itertools

import torch

from tuimon.recipe import Recipe, RecipeError
from tuimon.runner.emitter import Emitter


class BatchCycle:
    """Endless batches from a recipe's iterable, restarting it when it ends. ``next`` is the
    cheapest way to the next batch: for a list or tuple, a C-level cycle over its items."""

    def __init__(self, batches) -> None:
        self._source = batches
        self._it = iter(batches)
        fixed = type(batches) in (list, tuple) and len(batches) > 0
        self.next = itertools.cycle(batches).__next__ if fixed else self.__next__

    def __next__(self):
        try:
            return next(self._it)
        except StopIteration:
            self._it = iter(self._source)
        try:
            return next(self._it)
        except StopIteration:
            raise RecipeError(
                "Recipe.batches is empty or a one-shot generator; return a list or re-iterable"
            ) from None


def to_device(obj, device):
    if isinstance(obj, torch.Tensor):
        return obj.to(device, non_blocking=True)
    if isinstance(obj, (list, tuple)):
        return type(obj)(to_device(o, device) for o in obj)
    if isinstance(obj, dict):
        return {k: to_device(v, device) for k, v in obj.items()}
    return obj


def mover(device: str):
    """``to_device`` for one device, cheap in the usual cases: a tuple or list of tensors, and
    tensors already there (``Tensor.to`` would hand those back as they are; on CPU, the check
    is one attribute read instead of a call through the dispatcher)."""
    target = torch.device(device)
    on_cpu = target.type == "cpu"

    def move(obj):
        if isinstance(obj, torch.Tensor):
            if on_cpu and type(obj) is torch.Tensor and obj.is_cpu:
                return obj
            return obj.to(target, non_blocking=True)
        kind = type(obj)
        if kind is tuple or kind is list:
            if on_cpu:
                for o in obj:
                    if not (type(o) is torch.Tensor and o.is_cpu):
                        break
                else:  # all there already: the same items (a tuple is immutable: itself)
                    return obj if kind is tuple else list(obj)
            out = [move(o) for o in obj]
            return tuple(out) if kind is tuple else out
        if isinstance(obj, (list, tuple)):
            return kind(move(o) for o in obj)
        if isinstance(obj, dict):
            return {k: move(v) for k, v in obj.items()}
        return obj

    return move


class LossReader:
    """Loss values without a per-step sync: on CUDA, an async copy into a pinned ring buffer
    (one preallocated 0-d view per slot, so a step indexes nothing). On CPU, ``float`` at the
    step's end, inside its time (a profiler capture shows it as tuimon's "loss read")."""

    def __init__(self, on_cuda: bool, size: int = 4096) -> None:
        self.on_cuda = on_cuda
        self.size = size
        self._ring = torch.empty(size, dtype=torch.float32, pin_memory=True) if on_cuda else None
        self._slots = list(self._ring.unbind()) if on_cuda else None

    def capture(self, i: int, loss):
        if not self.on_cuda:
            return float(loss)
        self._slots[i % self.size].copy_(loss.float(), non_blocking=True)
        return None

    def read(self, i: int, captured):
        return float(self._slots[i % self.size]) if self.on_cuda else captured


class StepRing:
    """The steps measured and not handed over yet, in fixed-size columns allocated once: the
    loop writes step ``i`` at slot ``i & mask``; a flush reads them back from ``first`` and
    builds their events. The rare extras (compile time, profiler capture) go in a dict."""

    def __init__(self, size: int = 4096, pre: bool = False) -> None:
        if size & (size - 1):
            raise ValueError("the ring's size must be a power of two")
        self.size = size
        self.mask = size - 1
        self.t = [0.0] * size  # when the step ended (unix seconds)
        self.data_ms = [0.0] * size
        self.n = [0] * size
        self.loss: list = [None] * size  # as LossReader.capture gave it
        # i -> (compile_ms, profiled, gap, mem): a script's gap is a step that held something else
        # than training (a validation pass; runner/script/); mem, a step whose memory per phase
        # was read (runner/memory_phases.py)
        self.extra: dict[int, tuple] = {}
        self.first = 0  # the oldest step not handed over
        # A rank of a job: ms from the step's start to its (last) backward(), or None.
        self.pre: list | None = [None] * size if pre else None
        # Where the step went: (data, forward, backward, optimizer) in ms, None for a phase it
        # could not see; None: not measured (a profiled step). Written by the loop or the script
        # hooks on the CPU, by the CUDA clock once the step's events are done (runner/timing.py).
        self.ph: list = [None] * size


def _same(batch):
    return batch


def _in_place(batches, move) -> bool:
    """A list or tuple of batches that ``move`` hands back as they are (tuples of CPU tensors on
    CPU): the loop can skip the hand-over. Asked on CPU only (elsewhere ``move`` copies)."""
    return type(batches) in (list, tuple) and len(batches) > 0 and all(move(b) is b for b in batches)


def _fixed_samples(recipe: Recipe) -> int | None:
    """The samples in every batch of a fixed list of batches, when they all hold the same number
    (None otherwise, or for an iterable: then each step counts its own)."""
    batches = recipe.batches
    if type(batches) not in (list, tuple) or not batches:
        return None
    try:
        counts = {samples_in(b, recipe) for b in batches}
    except Exception:  # noqa: BLE001 - the step will say what is wrong with the batch
        return None
    return counts.pop() if len(counts) == 1 else None


def samples_in(batch, recipe: Recipe) -> int:
    if recipe.samples_per_batch:
        return recipe.samples_per_batch
    inputs = batch[0]
    return inputs.shape[0] if isinstance(inputs, torch.Tensor) and inputs.dim() else 1


_NO_EXTRA = (0.0, None, False, 0)


def emit_ready(emitter: Emitter, times_ms: list[float], ring: StepRing, losses: LossReader,
               recorded: int, warmup: int) -> None:
    """Hand over the ring's steps whose times the clock gave (in order, from ``ring.first``); the
    clock may have one time more than ``recorded`` steps when a stop came between the two."""
    first, mask, extra = ring.first, ring.mask, ring.extra
    count = min(len(times_ms), recorded - first)
    emit_step, read, pre, ph = emitter.emit_step, losses.read, ring.pre, ring.ph
    for j in range(count):
        i = first + j
        k = i & mask
        compile_ms, profiled, gap, mem = extra.pop(i, _NO_EXTRA) if extra else _NO_EXTRA
        emit_step(i, ring.t[k], round(times_ms[j], 4), round(ring.data_ms[k], 4), ring.n[k],
                  read(i, ring.loss[k]), "warmup" if i < warmup else "steady",
                  round(compile_ms, 3) if compile_ms else 0.0, profiled, 1 if gap else 0,
                  None if pre is None or pre[k] is None else round(pre[k], 4), ph[k], mem)
    ring.first = first + count
