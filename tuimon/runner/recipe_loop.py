"""A recipe's training loop: the runner's own driver of the step engine (runner/engine.py). Each
step takes the next batch, hands it to the device and runs the trainer's step, whose parts'
ends the trainer marks (runner/trainer.py), so the step splits into data, forward, backward,
optimizer and other; the engine does the rest at each boundary. On CUDA nothing here
synchronises: the step clock and the marks are CUDA events and the loss an async copy, read once
the GPU has passed them. A capture that records a step gets its parts labelled instead.

The hot path (bench/hot_path.py measures it): per step two clock reads around the batch's hand-
over, the trainer's three marks, the loss capture and the engine's boundary.
"""

from __future__ import annotations

import time

from tuimon.runner.engine import StepEngine
from tuimon.runner.steps import BatchCycle, _fixed_samples, _in_place, _same, mover, samples_in
from tuimon.runner.trainer import Trainer


def run(trainer: Trainer, engine: StepEngine) -> str:
    """Train until the engine ends the run (its ``open`` said, its ``finish`` the caller's);
    returns why: steps, duration or stopped."""
    recipe = trainer.recipe
    on_cuda = engine.on_cuda
    cuda_mark = engine.clock.mark if on_cuda else None  # the data part's end: the clock's own
    if on_cuda:
        engine.use_marks = _marks_for(trainer)
        engine.use_marks(cuda_mark)
    next_batch = BatchCycle(recipe.batches).next
    move = mover(trainer.device)
    if not on_cuda and _in_place(recipe.batches, move):
        move = _same  # a fixed list of batches already there: handed over as they are
    fixed_n = recipe.samples_per_batch or _fixed_samples(recipe)
    # Locals for the hot path: each one a load instead of an attribute or a global lookup.
    step, perf, tr, guard = trainer.step, time.perf_counter, trainer, engine.guard
    guarded, ranked = guard.on, engine.ring.pre is not None
    stop_clock, capture_loss, boundary = engine.clock.stop, engine.losses.capture, engine.boundary
    i = 0
    try:
        reason = engine.begin("compiling" if trainer.compiled else "warmup")
        while reason is None:
            capture = engine.capture
            labelled = capture is not None and capture.recording
            if not labelled:  # the plain path: no label, no hook
                if guarded:
                    guard.ours()  # the batch's hand-over is tuimon's work
                t_data = perf()
                batch = move(next_batch())
                t_moved = perf()
                if cuda_mark is not None:
                    cuda_mark()  # the data part ends (an event: the step's marks follow it)
                if guarded:
                    guard.theirs()  # the recipe's step may sync as it likes
                loss = step(batch)
                if guarded:
                    guard.ours()
                captured = capture_loss(i, loss)
            else:
                t_data = perf()
                with capture.label("data"):
                    batch = move(next_batch())
                t_moved = perf()
                if cuda_mark is not None:
                    cuda_mark()
                if guarded:
                    guard.theirs()  # the recipe's step, and the capture, as they like
                loss = trainer.profiled_step(batch, capture)
                with capture.label("loss read"):
                    captured = capture_loss(i, loss)
            stop_clock()
            m_f = tr.m_f
            data_ms = (t_moved - t_data) * 1000.0
            # A step that did not mark its parts (a stand-in step) has no split; the profiler's
            # cost is in a captured step's parts (kept apart by the statistics).
            ph = None if on_cuda or m_f < t_moved else (
                data_ms, (m_f - t_moved) * 1000.0, (tr.m_b - m_f) * 1000.0, (tr.m_o - tr.m_b) * 1000.0)
            pre = (m_f - t_data) * 1000.0 if ranked and not labelled else None
            reason = boundary(captured, fixed_n or samples_in(batch, recipe), data_ms, ph, pre)
            i += 1
    except KeyboardInterrupt:
        engine.reason = "stopped"  # by the supervisor, at its request
    finally:
        guard.restore()
    return engine.reason or "stopped"


def _marks_for(trainer: Trainer):
    """CUDA: the trainer's marks record ``mark``'s event on the step clock (the memory step's
    read the allocator too) and still hand back the host clock (a rank's time to backward())."""
    perf = time.perf_counter

    def use(mark) -> None:
        def marked() -> float:
            mark()
            return perf()

        trainer.mark = marked

    return use


def train_steps(trainer: Trainer, emitter, steps: int, warmup: int = 0, *, control=None,
                watch=None, profiler=None, guard=None, on_cuda: bool | None = None) -> str:
    """``steps`` steps of ``trainer`` outside a session (the benches, the tests): a step engine
    set up as ``python -m tuimon.runner`` sets one up (``control``: its control lines, none by
    default; ``profiler``: a capture window; ``guard``: a SyncGuard instead of the
    environment's), run, then finished. Returns why it ended."""
    from tuimon.runner.compile_watch import CompileWatch
    from tuimon.runner.control_lines import ControlLines
    from tuimon.runner.engine import CaptureWindow
    from tuimon.settings import RunSettings

    engine = StepEngine(RunSettings.make(steps=steps, warmup=str(warmup)), emitter,
                        control or ControlLines(None), watch or CompileWatch())
    if profiler is not None:
        engine.add(CaptureWindow(profiler))
    cuda = trainer.device_type == "cuda" if on_cuda is None else on_cuda
    engine.open(trainer.device, cuda, {}, guard)
    reason = run(trainer, engine)
    engine.finish(reason)
    return reason
