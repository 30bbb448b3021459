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


# The validation work a step held: a module put in eval mode, batches from another DataLoader.
HELD_EVAL, HELD_LOADER = 1, 2
_WHAT = {HELD_EVAL: "model.eval()", HELD_LOADER: "batches from another DataLoader",
         HELD_EVAL | HELD_LOADER: "model.eval() and another DataLoader's batches"}


class Recurring:
    """Whether the validation work a step held makes it a gap, kept out of the steady state.

    A validation pass (after an epoch, every N steps, Lightning's sanity check) is occasional: the
    step that holds it is a gap. Eval work that recurs step after step (a graph network's two
    eval forwards for its train and validation accuracy, in every iteration; a frozen part put in
    eval mode each step) belongs to the step: the step holds it in the steady state, its time is
    the step's eval part (runner/phases.py). Decided at each step's end from the one before, so
    the live views, the summary and steps.csv read the same ``gap`` flag: a step is a gap when it
    held work the step before did not (the first of a recurring kind is one), or when its
    validation work compiled (a one-time cost)."""

    def __init__(self) -> None:
        self.before = 0  # what the step before held
        self._said = 0

    def gap(self, i: int, held: int, compiled: bool, note) -> bool:
        before, self.before = self.before, held
        if not held:
            return False
        if held & ~before or compiled:
            return True
        if held & ~self._said:
            self._said |= held
            note(f"{_WHAT[held]} in every step since step {i - 1}: work inside the step, measured "
                 "with it (the model's calls with gradients off as its eval part), not a validation pass")
        return False
