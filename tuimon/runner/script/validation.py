"""Whether a script is validating, and so whether a compile belongs to its validation pass.

A validation pass (``model.eval()`` and ``torch.no_grad()`` after each epoch, HF Trainer's
evaluation inside the loop, Lightning's sanity check before the first step) compiles too:
eval mode and no grad fail the training graph's guards. Those compiles are counted, timed and
reported apart, never as training's recompiles (runner/compile_watch.py, compile_trace.py).

A compile is a validation pass's when it starts after a module was put in eval mode with
gradients off (``no_grad``, ``inference_mode``), or after batches from another DataLoader than
the training one; a training batch, ``backward()``, ``model.train()`` or the step's end says
training is back. An eval-mode module run with gradients on stays training's (a validation pass
without ``no_grad`` and without a loader of its own is not told apart).
"""

from __future__ import annotations

import torch

EVAL, LOADER = "eval", "loader"
KEPT = 4096  # compile ids remembered (a run has a few; a bound all the same)


class Validating:
    def __init__(self) -> None:
        self.since: str | None = None  # None (training), EVAL or LOADER
        self._decided: dict[str, bool] = {}  # compile id -> a validation pass's

    def eval_mode(self) -> None:
        if self.since is None:
            self.since = EVAL

    def other_loader(self) -> None:
        self.since = LOADER

    def training(self) -> None:
        self.since = None

    def compile(self, compile_id: str | None) -> bool:
        """Whether the compile ``compile_id`` is a validation pass's, decided when first asked
        (torch says a recompile's reasons before its start callback) and kept, so its later
        events (its metrics, a lazy backward) say the same."""
        if compile_id in self._decided:
            return self._decided[compile_id]
        validating = self.since == LOADER or (self.since == EVAL and not torch.is_grad_enabled())
        if compile_id:
            if len(self._decided) >= KEPT:
                self._decided.clear()
            self._decided[compile_id] = validating
        return validating
