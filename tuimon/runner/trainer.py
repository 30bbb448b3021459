"""One variant's model, optimiser and step: compile mode and precision applied, the plain step and
its labelled parts for a profiler capture. The loop (recipe_loop.py) runs it; nothing here reads
control lines or writes events."""

from __future__ import annotations

import contextlib
import time

import torch

from tuimon.recipe import Recipe
from tuimon.runner.compile_optimizer import compile_step
from tuimon.runner.fixes import inputs_channels_last
from tuimon.settings import MODE, PRECISION
from tuimon.variants import compiles_optimizer, model_mode


def amp_dtype(device: str):
    """bf16 autocast on CPU and on GPUs that support it; fp16 (with a GradScaler) otherwise."""
    if device.startswith("cuda") and not torch.cuda.is_bf16_supported():
        return torch.float16
    return torch.bfloat16


class Trainer:
    """One variant's model, optimiser and step function, ready to run."""

    def __init__(self, recipe: Recipe, device: str, mode: str = MODE, precision: str = PRECISION, *,
                 compile_model=None, channels_last: bool = False) -> None:
        """``compile_model(model, mode)``: the model compiled as the run's fixes say (regional,
        dynamic: runner/fixes.py), else torch.compile; ``channels_last``: 4-D inputs converted in
        the step (the model already is)."""
        self.recipe = recipe
        self.device = device
        self.device_type = "cuda" if device.startswith("cuda") else "cpu"
        self.dtype = amp_dtype(device) if precision == "amp" else None
        use_scaler = self.dtype == torch.float16
        self.scaler = torch.amp.GradScaler("cuda") if use_scaler else None
        self.compiled = model_mode(mode) != "eager"
        compile_model = compile_model or (lambda m, mode: torch.compile(m, mode=mode))
        self.model = compile_model(recipe.model, model_mode(mode)) if self.compiled else recipe.model
        self.channels_last = channels_last
        # MODE+opt: the optimizer's step compiled too (a recipe's own optimizer; torch's kind)
        self.optimizer_compiled = compiles_optimizer(mode) and compile_step(torch, recipe.optimizer)
        # Where each part of the last step ended (perf_counter(); ``step``): forward (a rank's
        # backward begins there: its pre_ms), backward, optimizer. ``mark`` takes them: the clock
        # on the CPU; on CUDA the loop's, which also records an event on the step clock.
        self.mark = time.perf_counter
        self.m_f = self.m_b = self.m_o = 0.0

    def autocast(self):
        if self.dtype is None:
            return contextlib.nullcontext()
        return torch.autocast(device_type=self.device_type, dtype=self.dtype)

    def step(self, batch):
        """The step the loop runs: its three parts, each end marked (``m_f``, ``m_b``, ``m_o``),
        so the loop can split the step into data, forward, backward, optimizer and other. Under
        DDP the gradient all-reduce waits inside backward for the last rank to get there, so the
        time before it (``m_f``) is this rank's own work (analysis/stats/ranks.py)."""
        mark = self.mark
        loss = self.forward(batch)
        self.m_f = mark()
        self.backward(loss)
        self.m_b = mark()
        self.optimize()
        self.m_o = mark()
        return loss.detach()

    def plain_step(self, batch):
        # The step without marks, in one frame (a bare loop's reference: bench/trust.py).
        # profiled_step runs the same three parts, labelled: keep forward / backward / optimize
        # below in step with this.
        inputs, targets = batch
        if self.channels_last:
            inputs = inputs_channels_last(inputs)
        opt = self.recipe.optimizer
        with self.autocast():
            if self.recipe.forward_loss is not None:
                loss = self.recipe.forward_loss(self.model, inputs, targets)
            else:
                loss = self.recipe.loss_fn(self.model(inputs), targets)
        if self.scaler is not None:
            self.scaler.scale(loss).backward()
            self.scaler.step(opt)
            self.scaler.update()
        else:
            loss.backward()
            opt.step()
        opt.zero_grad(set_to_none=True)
        return loss.detach()

    # The three parts of a step, apart so a profiler capture can label each (profiled_step).
    def forward(self, batch):
        inputs, targets = batch
        if self.channels_last:  # the fix channels-last (runner/fixes.py), as a user's step would
            inputs = inputs_channels_last(inputs)
        with self.autocast():
            if self.recipe.forward_loss is not None:
                return self.recipe.forward_loss(self.model, inputs, targets)
            return self.recipe.loss_fn(self.model(inputs), targets)

    def backward(self, loss) -> None:
        if self.scaler is not None:
            self.scaler.scale(loss).backward()
        else:
            loss.backward()

    def optimize(self) -> None:
        opt = self.recipe.optimizer
        if self.scaler is not None:
            self.scaler.step(opt)
            self.scaler.update()
        else:
            opt.step()
        opt.zero_grad(set_to_none=True)

    def profiled_step(self, batch, capture):
        """``step`` with the capture's labels around forward, backward and optimizer. A step that
        fails because a backward hook met an in-place op runs again without backward hooks."""
        try:
            return self._labelled_step(batch, capture)
        except RuntimeError as exc:
            if not capture.hooks_failed(exc):
                raise
        self.recipe.optimizer.zero_grad(set_to_none=True)
        return self._labelled_step(batch, capture)

    def _labelled_step(self, batch, capture):
        # Marked as ``step`` is, so a captured step's phases can be set beside the capture's
        # own split of the same steps (bench/phase_agreement.py).
        mark = self.mark
        with capture.label("forward"):
            loss = self.forward(batch)
        self.m_f = mark()
        with capture.label("backward"):
            self.backward(loss)
            capture.end_backward()
        self.m_b = mark()
        with capture.label("optimizer"):
            self.optimize()
        self.m_o = mark()
        return loss.detach()


def param_count(model) -> int:
    return sum(p.numel() for p in model.parameters())
