"""The recipe runner's loop as the benches drive it, in this checkout or an older one (set
PYTHONPATH to it to measure before / after): the step engine (runner/recipe_loop.py, issue 41)
where there is one, else the loop it replaced (runner/loop.py)."""

from __future__ import annotations

import inspect

try:
    from tuimon.runner import recipe_loop
    from tuimon.runner.trainer import Trainer

    loop = None
except ImportError:  # a checkout from before the step engine
    recipe_loop = None
    from tuimon.runner import loop  # type: ignore[no-redef]


def trainer(recipe, device: str, steps: int = 0, warmup: int = 1):
    """The runner's Trainer for ``recipe`` (eager, fp32); ``steps`` / ``warmup``: the old loop's."""
    if loop is not None:
        return loop.Trainer(recipe, device, loop.LoopSettings("eager", "fp32", steps, None, warmup))
    return Trainer(recipe, device)


def train(t, emitter, steps: int, warmup: int = 1, *, control=None, profiler=None,
          count_flops: bool = False) -> float:
    """``steps`` steps of trainer ``t`` as the runner runs them; returns the seconds its FLOP count
    took (0 without one), which are no step's."""
    from tuimon.runner import flop_event
    from tuimon.runner.compile_watch import CompileWatch

    counted = [0.0]
    if loop is None:
        from tuimon.runner.control_lines import ControlLines
        from tuimon.runner.engine import CaptureWindow, StepEngine
        from tuimon.settings import RunSettings

        engine = StepEngine(RunSettings.make(steps=steps, warmup=str(warmup)), emitter,
                            control or ControlLines(None), CompileWatch())
        if profiler is not None:
            engine.add(CaptureWindow(profiler))
        if count_flops:
            flops = engine.add(flop_event.RecipeFlops(t))
            flops_at = flops.boundary

            def timed(engine, i):  # its seconds, for the caller to leave out
                before = engine._began
                flops_at(engine, i)
                counted[0] = engine._began - before

            flops.boundary = timed
        engine.open(t.device, t.device_type == "cuda", {})
        engine.finish(recipe_loop.run(t, engine))
        return counted[0]
    more = {}
    if count_flops and "first" in inspect.signature(loop.run).parameters:
        def first() -> float:
            counted[0] = flop_event.emit(emitter, t.device, lambda: flop_event.recipe_count(
                t, loop.mover(t.device)))
            return counted[0]

        more["first"] = first
    loop.run(t, emitter, CompileWatch(), control, profiler, **more)
    return counted[0]


def control_lines(fd: int):
    """The runner's control lines read from ``fd`` (a pipe's read end)."""
    try:
        from tuimon.runner.control_lines import ControlLines
    except ImportError:  # before the step engine
        from tuimon.runner.control import Control as ControlLines  # type: ignore[no-redef]
    return ControlLines(fd)
