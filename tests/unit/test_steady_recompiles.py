"""The runner's live warning "recompiled N times in steady state" (runner/engine.py) counts
training's recompiles once its compiles settled: not a script's compiles outside training
(sampling, a validation pass: kept apart), nor new shapes in its first steps (issue 40 rerun,
N3: PPO's rollout compiles and SAC's step-2 shapes were said as steady recompiles)."""

from __future__ import annotations

from test_hot_path import tiny_trainer
from test_profiling import ListEmitter

from tuimon import events
from tuimon.runner import recipe_loop
from tuimon.runner.compile_watch import CompileWatch
from tuimon.runner.control_lines import ControlLines
from tuimon.runner.engine import StepEngine
from tuimon.settings import RunSettings


def warnings_for(compiles: dict[int, list[tuple[str, bool]]], steps: int = 120) -> list[str]:
    emitter = ListEmitter()
    engine = StepEngine(RunSettings.make(steps=steps, warmup="1"), emitter, ControlLines(None),
                        CompileWatch())
    seen = {"i": 0}

    def step(batch):
        for compile_id, outside in compiles.get(seen["i"], ()):
            engine.compiling(compile_id, outside=outside)
        seen["i"] += 1
        import torch
        return torch.zeros(())

    trainer = tiny_trainer(step=step)
    engine.open(trainer.device, False, {}, None)
    engine.finish(recipe_loop.run(trainer, engine))
    return [e["text"] for e in emitter.events if e["type"] == events.WARNING
            and "steady state" in e.get("text", "")]


def test_warm_up_shapes_and_compiles_outside_training_are_no_steady_recompiles():
    assert warnings_for({0: [("0/0", False)], 1: [("0/1", False)], 2: [("0/2", False)],
                         40: [("1/0", True)], 60: [("1/1", True)]}) == []


def test_recompiles_after_the_compiles_settled_are_said_every_one_counted():
    said = warnings_for({0: [("0/0", False)], 50: [("0/1", False)], 52: [("0/2", False)],
                         54: [("0/3", False)]})
    assert said == ["recompiled 2 times in steady state (latest 0/2): its step times are unreliable"]
