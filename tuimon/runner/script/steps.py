"""A script's steps, found from the outside: a step ends when the lead optimizer (the first one
stepped) has stepped, and the next one starts there. What happened in between (batches taken,
their wait and size, the last backward's loss, a validation pass) becomes that step's facts,
handed to the step engine (runner/engine.py), which records them as a recipe's steps are. A
step that held a validation pass is a gap unless the step before held the same (eval work
inside every step: runner/script/validation.py).

At a boundary the engine reads the control lines, waits for the interleaved schedule's turn and
ends the run at ``--steps`` / ``--duration``: then ``StopScript`` (a KeyboardInterrupt) is
raised from inside ``optimizer.step()``, so the script's own ``except KeyboardInterrupt`` and
``finally`` blocks run, as on Ctrl-C. The run's end (``finished``, ``crashed``) is
runner/script/ending.py's.
"""

from __future__ import annotations

import time

import torch

from tuimon import events
from tuimon.runner.engine import CaptureWindow, StepEngine
from tuimon.runner.fsdp_waits import NOT_ON_CUDA, FsdpWaits, fsdp_group_module
from tuimon.runner.phases import DATA, Timeline
from tuimon.runner.script.anatomy import Anatomy
from tuimon.runner.script.batches import Fetched
from tuimon.runner.script.lead import STEP, TAKEN, Lead
from tuimon.runner.script.losses import StepLosses
from tuimon.runner.script.validation import (
    HELD_EVAL,
    HELD_LOADER,
    HELD_NO_GRAD,
    Recurring,
    Validating,
    held_kinds,
)
from tuimon.settings import RunSettings


def _epoch(loader_iter) -> int | None:
    """A DataLoader iterator's batches an epoch, when its sampler is sized (an iterable dataset's
    may not be, or may raise)."""
    try:
        return int(len(loader_iter)) if loader_iter is not None else None
    except Exception:  # noqa: BLE001 - an unsized or odd sampler: not known
        return None


class StopScript(KeyboardInterrupt):
    """tuimon ends the script at a step boundary (--steps, --duration, a stop): Ctrl-C's way."""


class ScriptSteps:
    def __init__(self, settings: RunSettings, emitter, control, watch, ident: dict | None = None,
                 validating: Validating | None = None) -> None:
        self.settings = settings
        # At least the first step is warm-up: it is timed from where training first showed, mid-step.
        self.engine = StepEngine(settings, emitter, control, watch, min_warmup=1,
                                 ranked=ident is not None)
        self.emitter = emitter
        self.watch = watch
        self.make_profiler = None  # made when training starts (the device is known then)
        self.modes = None  # compile_modes.py's CompileModes (the modules compiled)
        # A rank of a torchrun job (its identity from torchrun's environment, runner/link.py).
        self.ident = ident
        self.enabled = True  # False in a forked child (a DataLoader worker) and once ended
        self.started = False  # run_started said: the first sign of training seen
        self.reason: str | None = None  # why tuimon ended the script (steps, duration, stopped)
        self.failed = False
        self.boundaries = 0
        self.fixes = None  # tuimon try's (runner/script/fixes.py): settled as the run ends
        self.children = None  # runner/script/children.py: training in child processes
        self.backward_at = 0.0  # perf_counter() as the step's last backward() began (hooks)
        self.timeline = Timeline()  # the step's parts, from the hooks (runner/phases.py)
        self._t0 = 0.0  # perf_counter() as the step began
        # Per step, reset at each boundary.
        self.data_s = 0.0
        self.samples = 0
        self.gap = False  # a gap whatever the step before held (a pass before training)
        self.held = 0  # validation work seen: HELD_EVAL | HELD_LOADER (validation.py)
        self.backwards = 0
        self.backward_losses = StepLosses()  # which backward() losses a step's loss sums (losses.py)
        self.stepping_depth = 0  # optimizer step() calls under way (a closure runs inside one)
        self.train_data = None  # id of the training loader's dataset (the one a step ends with)
        self.last_data = None
        self.epochs: dict[int, int | None] = {}  # a loader's batches an epoch (None: unsized)
        # Whose a compile is: training's or a validation pass's (its watch asks it too).
        self.validating = validating or Validating()
        self.recurring = Recurring()  # whether the validation work a step held makes it a gap
        self.first_step = None  # called as the first step ends (runner/script/hooks.py)
        self.forward = None  # the ForwardTimer (phases.py): the trained module
        # Which call ends a step: the lead optimizer's step(), or backward() (lead.py).
        self.leader = Lead(self.note)
        self.anatomy = Anatomy(emitter, self.leader)  # how the loop was read (anatomy.py)
        self.fetched = Fetched()  # batches not trained on yet: a backward() takes one (batches.py)
        self._notes_said: set[str] = set()
        self.booted_at = time.monotonic()  # for the no-step watch (ending.py no_step_yet)
        self.compiled_at_boot = 0.0  # the watch's compile time when booted_at was set
        self._accum_said, self._last_backwards = False, 0  # the last step's backward() calls (0: a gap)

    @property
    def i(self) -> int:
        """Steps recorded so far."""
        return self.engine.i

    # ---- what the hooks tell ----------------------------------------------------------------
    def activity(self) -> None:
        """A first sign of training (a batch, a backward, a compile, an optimizer step)."""
        if not self.started and self.enabled:
            self._start()

    def batch(self, data_key: int, batch, seconds: float, loader_iter=None) -> None:
        if not self.enabled:
            return
        if data_key not in self.epochs:  # its batches an epoch, once: --until-known waits for its end
            self.epochs[data_key] = _epoch(loader_iter)
        if not self.started:
            # Training starts with this batch: its wait (a loader's workers starting) came before
            # step 0's clock, so it is start-up, not the step's data time; the data part is seen.
            self._start()
            self.timeline.seen[DATA] = True
        else:
            self.data_s += seconds
        self.last_data = data_key
        if self.train_data is not None and data_key != self.train_data:
            self.held |= HELD_LOADER  # another loader's batches (validation) inside this step
            self.validating.other_loader()
            return
        if self.train_data is not None:
            self.validating.since = None  # training (Validating.training(), without a call)
        self.fetched.add(data_key, batch)

    def double_backward(self, outputs) -> None:
        """torch.autograd.grad with create_graph (hooks.py): what it reaches is not compiled."""
        if self.enabled and self.modes is not None:
            self.modes.trained.double_backward(outputs)

    def no_grad_call(self) -> None:
        """The trained module called with gradients off (phases.py): sampling, generation, a
        rollout, eval forwards (model.eval() says which: validation.py)."""
        if self.enabled and self.started:
            self.held |= HELD_NO_GRAD

    def eval_mode(self) -> None:
        """``Module.train(False)``: a validation pass, or eval inside every step (validation.py)."""
        if self.enabled:
            self.validating.eval_mode()
            if self.started:
                self.held |= HELD_EVAL

    def backward(self, root) -> None:
        if not self.enabled:
            return
        self.validating.since = None  # training (Validating.training(), without a call)
        if not self.started:
            self._start()
        self.backwards += 1
        if self.fetched:
            self.samples += self.fetched.trained_on(self.last_data)
        if isinstance(root, torch.Tensor) and root.numel() == 1:
            self.backward_losses.backward(root)
        if self.leader.backward(self.backwards, self.stepping_depth > 0):
            self.boundary()

    def stepping(self, optimizer) -> None:
        """An optimizer's step() begins: the losses so far were computed outside it (a
        closure's, LBFGS's, come inside it)."""
        self.backward_losses.stepping()
        self.stepping_depth += 1

    def optimizer_stepped(self, optimizer) -> None:
        self.stepping_depth = max(0, self.stepping_depth - 1)
        if not self.enabled:
            return
        self.anatomy.stepped(optimizer)
        leader = self.leader
        ref = leader.ref  # the common case inline: the lead stepped, nothing else to weigh
        if ref is not None and ref() is optimizer and not leader.others and not leader.by_backward:
            self.boundary()
            return
        ended = leader.stepped(optimizer, self.i)
        if ended == TAKEN:
            self.gap = True  # this step held the old lead's last work and the new one's first steps
        if ended in (STEP, TAKEN):
            self.boundary()
        else:
            self.backward_losses.drop()  # another optimizer's losses: not the step's

    def step_skipped(self, optimizer) -> None:
        """GradScaler skipped ``optimizer.step()`` (inf/NaN gradients): still a step's end."""
        if self.enabled and self.leader.skipped(optimizer):
            self.note("GradScaler skipped optimizer.step() (inf/NaN gradients): such a step "
                      "still ends at scaler.step()")
            self.optimizer_stepped(optimizer)

    def note(self, text: str, **fields) -> None:
        """Said once per text, as a run warning flagged as a note (``uncompiled``: why a
        compiled variant compiles nothing, runner/script/compile_modes.py); a compiled model's
        ``repeated`` block as a model event instead (no view lists it)."""
        if text not in self._notes_said:
            self._notes_said.add(text)
            if "repeated" in fields:
                self.emitter.emit(events.MODEL, text=text, **fields)
            else:
                self.emitter.emit(events.WARNING, text=text, note=True, **fields)

    # ---- the run's start and the boundaries -------------------------------------------------
    def compiling(self, compile_id: str, backward: bool = False) -> None:
        """Dynamo starts a compile: a training compile before the first step starts the run (a
        validation pass's before training, nanoGPT's iter-0 eval, does not start step 0 there)."""
        outside = self.validating.compile(compile_id, backward) is not None
        if not self.started and not outside:
            self.activity()
        if self.enabled:
            self.engine.compiling(compile_id, backward, outside)

    def _fsdp_waits(self, on_cuda: bool) -> None:
        """An FSDP2 script's all-gathers and reduce-scatters timed (on the CPU: runner/fsdp_waits.py
        says why not on CUDA)."""
        group = fsdp_group_module()
        if group is None:
            return
        if on_cuda:
            self.note(NOT_ON_CUDA)
        else:
            self.engine.add(FsdpWaits(group, torch.compiler.is_compiling))

    def _start(self) -> None:
        self.started = True
        engine = self.engine
        on_cuda = torch.cuda.is_available() and torch.cuda.is_initialized()
        device = f"cuda:{torch.cuda.current_device()}" if on_cuda else "cpu"
        s = self.settings
        engine.open(device, on_cuda, dict(
            amp_dtype=None, grad_scaler=None, recipe=s.program.name or "script",
            script=list(s.program.command) or None, params=None, batch_size=None,
            image_size=None, extra={}, notes=list(s.hooks.notes), **self._rank_fields(),
            **({"fixes": list(self.fixes.names)} if self.fixes and self.fixes.names else {})))
        if on_cuda:  # the hooks' marks become events on the step clock, read with the step
            self.timeline.mark = engine.clock.mark
            self.timeline.guard = engine.guard if engine.guard.on else None
            engine.use_marks = self._use_marks
            from tuimon.runner.memory_phases import MemoryStep

            engine.add(MemoryStep(torch.cuda, torch.cuda.current_device(), s.mode != "eager"))
        self._fsdp_waits(on_cuda)
        if self.make_profiler is not None:
            profiler = self.make_profiler()
            profiler.outer = True  # captures name the modules outside the trained one
            engine.add(CaptureWindow(profiler))
        if s.profile.count_flops and self.ident is None and self.forward is not None:
            from tuimon.runner.script.flop_catch import FlopCatch

            engine.add(FlopCatch(self, self.forward))
        self.gap = self.validating.since is not None  # a pass before training: Lightning's sanity check
        self.booted_at = None  # waiting for the first turn is not "no optimizer step" (no_step_yet)
        try:
            reason = engine.begin("warmup")
        finally:
            self.booted_at, self.compiled_at_boot = time.monotonic(), self.watch.total_s
        if reason is not None:
            self.stop(reason)
        self._t0 = time.perf_counter()
        self.timeline.begin()

    def _use_marks(self, mark) -> None:
        self.timeline.mark = mark

    def _rank_fields(self) -> dict:
        """A rank's run_started: who it is in the job, and the process group's backend."""
        if self.ident is None:
            return {}
        backend = None
        try:  # not initialised (yet): said as None
            import torch.distributed as dist

            if dist.is_available() and dist.is_initialized():
                backend = str(dist.get_backend())
        except Exception:  # noqa: BLE001, S110 - a backend torch cannot name is None
            pass
        return {**self.ident, "backend": backend}

    def boundary(self) -> None:
        """The lead optimizer stepped: step ``i`` ended here and step ``i + 1`` starts."""
        if not self.enabled:
            return
        if not self.started:
            self._start()
        engine = self.engine
        timeline = self.timeline
        if engine.on_cuda:
            engine.clock.stop(timeline.unseen())  # the clock splits it once it is done
            ph = None
        else:
            engine.clock.stop()
            ph = timeline.end()
        loss, summed = self.backward_losses.take()
        if self.boundaries == 0 and self.first_step is not None:
            self.first_step()
        self.validating.since = None  # training (Validating.training(), without a call)
        held = self.held & ~HELD_NO_GRAD if self.held & HELD_EVAL else self.held  # eval's own calls
        if held or self.gap:  # did its validation work compile (a one-time cost)?
            self.gap = self.recurring.gap(engine.i, held, self.watch.val_in_step, self.note) or self.gap
        elif self.recurring.before:
            self.recurring.before = 0
        if not self.backwards and self.fetched:  # no backward() seen: what it fetched
            self.samples = self.fetched.take_all()
        elif self.gap:
            self.fetched.after_gap()
        if self.train_data is None:
            self.train_data = self.last_data
            self.anatomy.epoch = self.epochs.get(self.train_data)
        self._accumulation(summed)
        self.anatomy.step_ended(engine.i, self.backwards, summed, held_kinds(held), self.gap)
        pre = (self.backward_at - self._t0) * 1000.0 if self.backward_at >= self._t0 else None
        if loss is not None:
            guard = engine.guard
            if guard.on:  # tested first: the hot path makes no call it does not need
                guard.ours()
            loss = engine.losses.capture(engine.i, loss)
            if guard.on:
                guard.theirs()
        gap, samples, data_ms = self.gap, self.samples, self.data_s * 1000.0
        self.data_s, self.samples, self.gap, self.backwards, self.held = 0.0, 0, False, 0, 0
        self.boundaries += 1
        reason = engine.boundary(loss, samples, data_ms, ph, pre, gap)
        if reason is not None:
            self.stop(reason)
        self._t0 = time.perf_counter()
        if engine.on_cuda:  # the CPU's spans need no start: end() left the parts at zero
            timeline.begin()

    def _accumulation(self, summed: int) -> None:
        """Said once two steps in a row, neither kept apart, held the same count of backward()
        calls: step 0 holds only part of a GAN's losses, and a gap (an optimizer's take-over)
        lumps several steps."""
        if self.backwards > 1 and self.backwards == self._last_backwards and not self.gap \
                and not self.leader.by_backward and not self._accum_said:
            self._accum_said = True
            if summed > 1:  # they all went to the lead's step: accumulation, or several losses
                what = "gradient accumulation, or several losses"
                which = f"the sum of the {summed} backward() losses before its step()"
            else:  # the others trained other optimizers' modules (a GAN's discriminators)
                what = "the others went with other optimizers' step()"
                which = "the backward() loss before its step()"
            self.note(f"{self.backwards} backward() calls per optimizer step ({what}): a step here "
                      f"is one optimizer step, and its loss {which}",
                      backwards=self.backwards, summed=summed)
        self._last_backwards = 0 if self.gap else self.backwards

    def stop(self, reason: str) -> None:
        """The engine ended the run here (its steps handed over): end the script, as Ctrl-C."""
        self.reason = reason
        self.enabled = False  # whatever the script does while it winds down is not measured
        raise StopScript(f"tuimon: {reason}")
