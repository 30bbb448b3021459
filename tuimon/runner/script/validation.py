"""Whether a compile is training's, and which steps held other work than training.

A validation pass (``model.eval()`` and ``torch.no_grad()`` after each epoch, HF Trainer's
evaluation inside the loop, Lightning's sanity check before the first step) compiles too:
eval mode and no grad fail the training graph's guards; so do the model's other calls with
gradients off (sampling or generation every N steps, with a length that grows; an RL agent's
rollouts). Those compiles are counted, timed and reported apart, never as training's recompiles
(runner/compile_watch.py, compile_trace.py), with their kind: VALIDATION or NO_GRAD.

A compile is a validation pass's when it starts after a module was put in eval mode with
gradients off (``no_grad``, ``inference_mode``), or after batches from another DataLoader than
the training one; a training batch, ``backward()``, ``model.train()`` or the step's end says
training is back. Any other compile with gradients off is NO_GRAD's: training's forward needs
them (a lazy backward's compile, which runs with them off, follows its forward's). An
eval-mode module run with gradients on stays training's (a validation pass without ``no_grad``
and without a loader of its own is not told apart).
"""

from __future__ import annotations

import torch

EVAL, LOADER = "eval", "loader"
VALIDATION, NO_GRAD = "validation", "no_grad"  # whose a compile is, when not training's
KEPT = 4096  # compile ids remembered (a run has a few; a bound all the same)


class Validating:
    def __init__(self) -> None:
        self.since: str | None = None  # None (training), EVAL or LOADER
        self._decided: dict[str, str | None] = {}  # compile id -> its kind (None: training's)

    def eval_mode(self) -> None:
        if self.since is None:
            self.since = EVAL

    def other_loader(self) -> None:
        self.since = LOADER

    def training(self) -> None:
        self.since = None

    def compile(self, compile_id: str | None, backward: bool = False) -> str | None:
        """The compile ``compile_id``'s kind when it is not training's (VALIDATION, NO_GRAD),
        else None; decided when first asked (torch says a recompile's reasons before its start
        callback) and kept, so its later events (its metrics, a lazy ``backward``) say the same."""
        if compile_id in self._decided:
            return self._decided[compile_id]
        kind = None
        if not backward:
            grad = torch.is_grad_enabled()
            if self.since == LOADER or (self.since == EVAL and not grad):
                kind = VALIDATION
            elif not grad:
                kind = NO_GRAD
        if compile_id:
            if len(self._decided) >= KEPT:
                self._decided.clear()
            self._decided[compile_id] = kind
        return kind


# The work other than training a step held: a module put in eval mode, batches from another
# DataLoader, the trained module called with gradients off.
HELD_EVAL, HELD_LOADER, HELD_NO_GRAD = 1, 2, 4
_WHAT = {HELD_EVAL: "model.eval()", HELD_LOADER: "batches from another DataLoader",
         HELD_NO_GRAD: "calls of the trained module with gradients off"}


def held_kinds(held: int) -> str | None:
    """What a step held, as the anatomy keeps it: "eval", "loader", "no_grad", joined by "+"."""
    if not held:
        return None
    return "+".join(kind for bit, kind in ((HELD_EVAL, "eval"), (HELD_LOADER, "loader"),
                                           (HELD_NO_GRAD, "no_grad")) if held & bit)


def held_text(held: int) -> str:
    """What a step held, in words: "model.eval() and another DataLoader's batches"."""
    parts = [text for bit, text in _WHAT.items() if held & bit]
    return " and ".join(parts) if len(parts) < 3 else f"{', '.join(parts[:-1])} and {parts[-1]}"


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
            note(f"{held_text(held)} in every step since step {i - 1}: work inside the step, measured "
                 "with it (the model's calls with gradients off as its eval part), not a validation pass")
        return False
