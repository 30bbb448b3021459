"""A script's FLOPs (runner/flops.py), counted at one step boundary of its warm-up: the trained
module found by script/phases.py, called again on the arguments of its last training call,
with a backward from its outputs and the lead optimizer's eager step, then all of it undone.

The script's own step function is out of reach, so the counted step is rebuilt from what the
hooks see: the module's forward (its arguments kept by a catching wrapper during one whole step,
with the autocast the script had on around the call), a backward from its outputs (a loss the
script computes outside the module, cross-entropy and the like, has no matmul: FlopCounterMode
counts it 0 anyway), and the optimizer's step. A step that calls the module N times (gradient
accumulation) counts its forward and backward N times (``calls``).

Cost: the catching wrapper is in the module's slot for the first steps only (warm-up steps,
each one list store a call); once counted, the plain wrapper goes back and the boundaries carry
nothing a step (a component of the step engine, runner/engine.py).
"""

from __future__ import annotations

import contextlib

import torch

from tuimon.runner import flop_event
from tuimon.runner.flops import backward_of, count_step, detached, eager_module
from tuimon.runner.memory_phases import NEVER

TRIES = 8  # boundaries to wait for a whole step seen through the wrapper before saying why not


class FlopCatch:
    """The step engine's component (runner/engine.py) for a script's FLOP count: at each
    warm-up boundary until it has counted (or given up)."""

    def __init__(self, run, forward) -> None:
        self.run = run  # ScriptSteps
        self.forward = forward  # ForwardTimer: the trained module, its slot
        self.args = None  # (args, kwargs, autocast) of the step's last training call
        self.calls = 0  # training calls seen since the last boundary
        self.whole = False  # the wrapper was in place as this step began
        self.tries = 0
        self.due = 1  # the boundary after step 0
        forward.catch = self
        if forward.module is not None:
            forward.check(rewrap=True)  # found before training began: the catching wrapper in

    def seen(self, args, kwargs) -> None:
        """A training call of the trained module (from the catching wrapper)."""
        self.calls += 1
        self.args = (args, kwargs, _autocast())

    def start(self, engine) -> None:
        pass

    def end(self, engine) -> None:
        pass

    def boundary(self, engine, i: int) -> None:
        """Outside every step's clock: count once a whole step was seen (then never again), or
        give up after TRIES boundaries."""
        self.tries += 1
        self.due = NEVER
        if self.whole and self.calls and self.args is not None:
            args, kwargs, cast = self.args
            module, calls = self.forward.module, self.calls
            self._done()
            engine.excluded(flop_event.emit(engine.emitter, engine.device, lambda: self._count(
                module, args, kwargs, cast, calls, engine.on_cuda)))
            return
        if self.tries > TRIES:
            self._done()
            flop_event.emit(engine.emitter, engine.device, _nothing)
            return
        self.whole = self.forward.module is not None and self.forward.wrapper is not None
        self.calls, self.args = 0, None
        self.due = i + 1

    def _done(self) -> None:
        self.forward.catch = None
        if self.forward.module is not None:
            self.forward.check(rewrap=True)  # the plain wrapper back in the slot
        self.args = None

    def _count(self, module, args, kwargs, cast, calls: int, on_cuda: bool) -> dict:
        eager = eager_module(module)
        call = type(eager)._call_impl  # the module's own call: past the slot and its wrapper
        args, kwargs = detached(args), detached(kwargs)
        params = tuple(p for p in eager.parameters() if p.requires_grad)

        def forward():
            with (torch.autocast(cast[0], dtype=cast[1]) if cast else contextlib.nullcontext()):
                return call(eager, *args, **kwargs)

        return count_step(eager, self.run.leader.lead, forward,
                          lambda out: backward_of(out, params), calls=calls, on_cuda=on_cuda)


def _nothing() -> dict:
    raise RuntimeError("no training call of the trained module seen in a whole step (its "
                       "forward is not split out): nothing to count on")


def _autocast() -> tuple | None:
    """(device type, dtype) of the autocast on around a call, or None."""
    for device in ("cuda", "cpu"):
        with contextlib.suppress(TypeError, AttributeError, RuntimeError):
            if torch.is_autocast_enabled(device):
                return device, torch.get_autocast_dtype(device)
    return None
