"""Which call ends a script's step: the lead optimizer's ``step()`` — the first optimizer that
steps — or, without one, each ``backward()``.

- Two optimizers a step (a GAN): the first one stepped leads; the other steps inside its steps.
- A lead the script lets go (its model and state freed, a second training after a first): the
  next optimizer that steps leads (held weakly: runner/refs.py).
- A lead the script keeps but no longer steps, while another steps again and again
  (mnist_forward_forward trains each layer's optimizer in turn): after ``TAKE_OVER`` steps in a
  row — and at least twice the longest run of others seen between two lead steps (a critic
  stepped 5 times a step) — the other leads, and the step that held the change is kept apart.
  Before, the second layer's 100 steps belonged to no step: half of that run unseen.
- No optimizer made by the first ``backward()``: each ``backward()`` ends a step, from the first
  on (deciding at the second lost the first batch's step: 830 batches, 829 steps); an optimizer
  made later that steps takes over. An optimizer made but not stepped in ``FALLBACK_BACKWARDS``
  backward() calls (one that is not torch.optim's) gives way to backward() too.

``Lead`` decides; ``ScriptSteps`` (steps.py) ends the step it is told to.
"""

from __future__ import annotations

from tuimon.runner.refs import weak

FALLBACK_BACKWARDS = 64  # backward() calls without an optimizer step: time steps by backward
TAKE_OVER = 10  # another optimizer's steps in a row, the lead idle, before it leads
STEP, TAKEN = "step", "taken"  # what an optimizer's step is: a step's end, or the lead's change


class Lead:
    def __init__(self, note, changed=None) -> None:
        self.note = note  # one line for the run's notes, said once
        self.changed = changed  # called with a new lead optimizer (hooks.py: its model found)
        self.ref = None  # the lead, weakly: one the script lets go is freed as without tuimon
        self.optimizers = 0  # torch.optim optimizers made so far
        self.by_backward = False  # a step is one backward() to the next
        self.inside = False  # ... all inside an optimizer's step() (a closure's: LBFGS)
        self._unmade = False  # ... because no optimizer was made by the first backward()
        self._other = None  # another optimizer stepping while the lead does not (weakly)
        self.others = 0  # ... its steps in a row since the lead's last
        self._longest = 0  # the most steps of others between two lead steps so far

    @property
    def lead(self):
        return self.ref() if self.ref is not None else None

    def made(self) -> None:
        self.optimizers += 1

    def backward(self, backwards: int, inside: bool = False) -> bool:
        """A ``backward()`` ended (the step's ``backwards``-th; ``inside`` an optimizer's step(),
        a closure's): does it end the step?"""
        if self.ref is not None:
            return False
        if not self.by_backward and (self.optimizers == 0 or backwards >= FALLBACK_BACKWARDS):
            self.by_backward = True
            self.inside = inside
            self._unmade = self.optimizers == 0
            what = ("no torch.optim optimizer was made before the first backward()" if self._unmade
                    else f"{backwards} backward() calls inside one optimizer step() (its closure, as "
                    "LBFGS's, trains there)" if inside
                    else f"{backwards} backward() calls without an optimizer step")
            self.note(f"{what}: steps are timed from one backward() to the next (tuimon finds steps "
                      "by torch.optim optimizers' step())")
        return self.by_backward

    def stepped(self, optimizer, i: int) -> str | None:
        """``optimizer`` stepped during step ``i``: STEP when that ends the step, TAKEN when it
        now leads instead of an idle lead (the step is then kept apart), None otherwise."""
        if self.by_backward:
            if not self._unmade:
                return None
            self.by_backward = self._unmade = False
            self.note(f"an optimizer made after the first backward() stepped: its step() ends the "
                      f"steps from step {i + 1} on")
        ref = self.ref  # inline: a property is one call more, every step
        lead = ref() if ref is not None else None
        if lead is None:  # the first step, or the lead was let go (a second training)
            lead, self.ref = optimizer, weak(optimizer)
            if self.changed is not None:  # its module: timed and compiled (hooks.py)
                self.changed(optimizer)
        if optimizer is lead:
            if self.others:
                self._longest = max(self._longest, self.others)
                self.others = 0
            return STEP
        return self._other_stepped(optimizer, i)

    def skipped(self, optimizer) -> bool:
        """GradScaler skipped ``optimizer.step()``: would its step have ended the step?"""
        return not self.by_backward and (self.lead is None or optimizer is self.lead)

    def _other_stepped(self, optimizer, i: int) -> str | None:
        if self._other is None or self._other() is not optimizer:
            self._other, self.others = weak(optimizer), 0
        self.others += 1
        if self.others <= max(TAKE_OVER, 2 * self._longest):
            return None
        self.ref, self.others, self._other = self._other, 0, None
        self.note(f"another optimizer stepped {TAKE_OVER + 1} times in a row while the lead was idle: "
                  f"training moved on to it, and its steps are the run's from step {i + 1} (the "
                  "step between is kept apart)")
        if self.changed is not None:
            self.changed(optimizer)
        return TAKEN
