"""A script's FLOPs (runner/flops.py), counted at one step boundary of its warm-up: the trained
module found by script/phases.py, called again on the arguments of its last training call,
with a backward from its outputs and the lead optimizer's eager step, then all of it undone.

The script's own step function is out of reach, so the counted step is rebuilt from what the
hooks see: the module's forward (its arguments kept by a catching wrapper during one whole step,
with the autocast the script had on around the call), a backward from its outputs (a loss the
script computes outside the module, cross-entropy and the like, has no matmul: FlopCounterMode
counts it 0 anyway), and the optimizer's step. A step that calls the module N times (gradient
accumulation) counts its forward and backward N times (``calls``). Calls whose arguments differ
in shape are counted apart (a physics-informed net's 100 boundary points and 10,100 collocation
points; a DQN's batch-1 acting calls beside its batch-128 update), and a call's backward only
when a backward reached its output (a hook on the output, during the caught step): an acting
call made with gradients on, never differentiated, is a forward alone. Modules other optimizers
train outside the counted one are named (``uncounted``): the count is then the lead's module's
alone, and no MFU is worked out from it.

Cost: the catching wrapper is in the module's slot for the first steps only (warm-up steps,
each one list store a call); once counted, the plain wrapper goes back and the boundaries carry
nothing a step (a component of the step engine, runner/engine.py).
"""

from __future__ import annotations

import contextlib

import torch

from tuimon.runner import flop_event
from tuimon.runner.flops import Calls, backward_of, count_step, detached, eager_module, tensors_in
from tuimon.runner.memory_phases import NEVER

TRIES = 8  # boundaries to wait for a whole step seen through the wrapper before saying why not
SHAPES = 16  # kinds of call (arguments' shapes) counted apart; more: the step is not counted


class FlopCatch:
    """The step engine's component (runner/engine.py) for a script's FLOP count: at each
    warm-up boundary until it has counted (or given up)."""

    def __init__(self, run, forward) -> None:
        self.run = run  # ScriptSteps
        self.forward = forward  # ForwardTimer: the trained module, its slot
        # the step's training calls by their arguments' shapes: [args, kwargs, autocast, times,
        # backed], the arguments those of the last call of that shape
        self.kinds: dict[tuple, list] = {}
        self.round = 0  # the caught step: a backward hook of an earlier one counts nothing
        self.whole = False  # the wrapper was in place as this step began
        self.tries = 0
        self.due = 1  # the boundary after step 0
        forward.catch = self
        if forward.module is not None:
            forward.check(rewrap=True)  # found before training began: the catching wrapper in

    def seen(self, args, kwargs) -> tuple:
        """A training call of the trained module (from the catching wrapper): its kind."""
        key = tuple((tuple(t.shape), t.dtype) for t in tensors_in((args, kwargs)))
        kind = self.kinds.get(key)
        if kind is None:
            kind = self.kinds[key] = [None, None, None, 0, 0]
        kind[:4] = [args, kwargs, _autocast(), kind[3] + 1]
        return key

    def output(self, key: tuple, out) -> None:
        """The call's output: a backward reaching it makes the call a backed one."""
        kind, round_ = self.kinds.get(key), self.round
        hit: list[bool] = []

        def backed(grad):
            if not hit and self.round == round_ and kind is not None:
                hit.append(True)
                kind[4] += 1

        for t in tensors_in(out):
            if t.requires_grad and t.grad_fn is not None:
                t.register_hook(backed)

    def start(self, engine) -> None:
        pass

    def end(self, engine) -> None:
        pass

    def boundary(self, engine, i: int) -> None:
        """Outside every step's clock: count once a whole step was seen (then never again), or
        give up after TRIES boundaries."""
        self.tries += 1
        self.round += 1
        self.due = NEVER
        if self.whole and self.kinds and len(self.kinds) <= SHAPES:
            kinds, module = list(self.kinds.values()), self.forward.module
            self._done()
            engine.excluded(flop_event.emit(engine.emitter, engine.device, lambda: {
                **self._count(module, kinds, engine.on_cuda), "uncounted": self._others(module)}))
            return
        if self.tries > TRIES:
            many = len(self.kinds) > SHAPES
            self._done()
            flop_event.emit(engine.emitter, engine.device, _too_many if many else _nothing)
            return
        self.whole = self.forward.module is not None and self.forward.wrapper is not None
        self.kinds = {}
        self.due = i + 1

    def _done(self) -> None:
        self.forward.catch = None
        if self.forward.module is not None:
            self.forward.check(rewrap=True)  # the plain wrapper back in the slot
        self.kinds = {}

    def _others(self, module) -> list[str]:
        """The modules other optimizers train outside ``module`` (a seq2seq's decoder, a GAN's
        generator): their FLOPs are not in the count, so no MFU stands on it (analysis says)."""
        counted = {id(p) for p in module.parameters()}
        lead = self.run.leader.lead
        return [seen.module or f"the parameters {seen.name} trains"
                for seen in self.run.anatomy.optimizers
                if seen.ref() is not None and seen.ref() is not lead and not seen.params <= counted]

    def _count(self, module, kinds: list, on_cuda: bool) -> dict:
        eager = eager_module(module)
        call = type(eager)._call_impl  # the module's own call: past the slot and its wrapper
        params = tuple(p for p in eager.parameters() if p.requires_grad)

        def forward_of(args, kwargs, cast):
            args, kwargs = detached(args), detached(kwargs)

            def forward():
                with (torch.autocast(cast[0], dtype=cast[1]) if cast else contextlib.nullcontext()):
                    return call(eager, *args, **kwargs)
            return forward

        if not any(k[4] for k in kinds):  # no output a hook could hold (not a tensor): every
            for k in kinds:               # call taken as differentiated, as a step's call mostly is
                k[4] = k[3]
        return count_step(eager, self.run.leader.lead,
                          [Calls(forward_of(*k[:3]), times=k[3], backed=k[4]) for k in kinds],
                          lambda out: backward_of(out, params), on_cuda=on_cuda)


def _nothing() -> dict:
    raise RuntimeError("no training call of the trained module seen in a whole step (its "
                       "forward is not split out): nothing to count on")


def _too_many() -> dict:
    raise RuntimeError(f"the trained module was called with arguments of more than {SHAPES} "
                       "shapes in one step: nothing to count on")


def _autocast() -> tuple | None:
    """(device type, dtype) of the autocast on around a call, or None."""
    for device in ("cuda", "cpu"):
        with contextlib.suppress(TypeError, AttributeError, RuntimeError):
            if torch.is_autocast_enabled(device):
                return device, torch.get_autocast_dtype(device)
    return None
