"""A script's steps, found from the outside: a step ends when the lead optimizer (the first one
stepped) has stepped, and the next one starts there. What happened in between (batches taken,
their wait and size, the last backward's loss, a validation pass, a compile) becomes that
step's event, through the same ring and emitter as a recipe's steps (runner/steps.py). A
validation pass's compiles are counted and timed apart, and a step that held one is a gap
unless the step before held the same (eval work inside every step: runner/script/validation.py).

At a boundary, outside the step's time, the control lines are read (pause / resume / stop /
profile, at most every POLL_S), the interleaved schedule's turn is waited for, and ``--steps``
/ ``--duration`` end the script: ``StopScript`` (a KeyboardInterrupt) is raised from inside
``optimizer.step()``, so the script's own ``except KeyboardInterrupt`` and ``finally`` blocks
run, as on Ctrl-C.
"""

from __future__ import annotations

import contextlib
import os
import time

import torch

from tuimon import events
from tuimon.runner.compile_watch import CompileWatch
from tuimon.runner.control import Control
from tuimon.runner.device import device_name
from tuimon.runner.emitter import Emitter
from tuimon.runner.loop import POLL_S, RING, obey, peak_memory
from tuimon.runner.memory_phases import NEVER, PhaseMemory
from tuimon.runner.phases import DATA, Timeline
from tuimon.runner.script.batches import Fetched
from tuimon.runner.script.ending import ScriptEnd
from tuimon.runner.script.lead import TAKEN, Lead
from tuimon.runner.script.validation import HELD_EVAL, HELD_LOADER, Recurring, Validating
from tuimon.runner.steps import LossReader, StepRing, _emit_ready
from tuimon.runner.syncdebug import ENV as SYNC_DEBUG_ENV
from tuimon.runner.syncdebug import SyncGuard
from tuimon.runner.timing import CpuClock, CudaClock
from tuimon.runner.torch_env import versions
from tuimon.runner.turns import Turns
from tuimon.settings import RunSettings


class StopScript(KeyboardInterrupt):
    """tuimon ends the script at a step boundary (--steps, --duration, a stop): Ctrl-C's way."""


class ScriptSteps(ScriptEnd):
    def __init__(self, settings: RunSettings, emitter: Emitter, control: Control,
                 watch: CompileWatch, ident: dict | None = None) -> None:
        self.settings = settings
        self.emitter = emitter
        self.control = control
        self.watch = watch
        self.trace = None  # a TraceListener on compiled variants (graph breaks, recompiles)
        self.profiler = None  # made when training starts (make_profiler: the device is known)
        self.make_profiler = None
        self.compile_asked = None  # callable: did this variant ask torch to compile? (compile_modes)
        # Round 1 of a variant's processes runs the whole length asked for, the others a K-th.
        steps, self.duration = settings.length.this_process()
        self.steps_asked = steps  # None: the script's own end
        self.steps = steps or float("inf")
        # At least the first step: it is timed from where training first showed, mid-step.
        self.warmup = max(1, settings.fixed_warmup)
        turns = settings.turns
        self.turns = Turns(turns.turn_steps, turns.turn_s, steps, self.duration,
                           first_only=turns.turn_first)
        # A rank of a torchrun job (its identity from torchrun's environment, runner/rank_link.py):
        # its steps also say how long they took to reach backward() (pre_ms).
        self.ident = ident
        self.enabled = True  # False in a forked child (a DataLoader worker) and once ended
        self.started = False  # run_started said: the first sign of training seen
        self.reason: str | None = None  # why tuimon ended the script (steps, duration, stopped)
        self.failed = False
        self.i = 0  # steps recorded so far
        self.boundaries = 0
        self.module = None  # the trained module, when compile_modes found it
        self.fixes = None  # tuimon try's (runner/script/fixes.py): settled as the run ends
        self.ring = StepRing(RING, pre=self.ident is not None)
        self.backward_at = 0.0  # perf_counter() as the step's last backward() began (hooks)
        self.timeline = Timeline()  # the step's parts, from the hooks (runner/phases.py)
        self._t0 = 0.0  # perf_counter() as the step began
        self.losses: LossReader | None = None
        self.clock = None
        self.on_cuda = False
        self.guard = SyncGuard(None, None)
        self.mem: PhaseMemory | None = None  # memory per phase on CUDA (runner/memory_phases.py)
        self.mem_at = NEVER
        # Per step, reset at each boundary.
        self.data_s = 0.0
        self.samples = 0
        self.gap = False  # a gap whatever the step before held (a pass before training)
        self.held = 0  # validation work seen: HELD_EVAL | HELD_LOADER (validation.py)
        self.backwards = 0
        self.loss = None
        self.train_data = None  # id of the training loader's dataset (the one a step ends with)
        self.last_data = None
        self.validating = Validating()  # whose a compile is: training's or a validation pass's
        self.recurring = Recurring()  # whether the validation work a step held makes it a gap
        self.first_step = None  # called as the first step ends (runner/script/hooks.py)
        # the ForwardTimer (hooks.py: the trained module) and the FLOP count (script/flop_catch.py)
        self.forward = self.at_boundary = None
        # Which call ends a step: the lead optimizer's step(), or backward() (lead.py).
        self.leader = Lead(self.note)
        self.fetched = Fetched()  # batches not trained on yet: a backward() takes one (batches.py)
        self._notes_said: set[str] = set()
        self._compiles = 0
        self._phase = "building"
        self._poll_at = 0.0
        self._began = self._booted = time.monotonic()  # _began: reset as training starts (--duration)
        self._compiled_at_boot = 0.0  # the watch's compile time when _booted was set
        self._accum_said, self._last_backwards = False, 0  # the last step's backward() calls (0: a gap)

    # ---- what the hooks tell ----------------------------------------------------------------
    def activity(self) -> None:
        """A first sign of training (a batch, a backward, a compile, an optimizer step)."""
        if not self.started and self.enabled:
            self._start()

    def batch(self, data_key: int, batch, seconds: float) -> None:
        if not self.enabled:
            return
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
            guard = self.guard
            if guard.on:  # tested first: the hot path makes no call it does not need
                guard.ours()
            self.loss = self.losses.capture(self.i, root.detach())
            if guard.on:
                guard.theirs()
        if self.leader.backward(self.backwards):
            self.boundary()

    def optimizer_stepped(self, optimizer) -> None:
        if not self.enabled:
            return
        leader = self.leader
        ref = leader.ref  # the common case inline: the lead stepped, nothing else to weigh
        if ref is not None and ref() is optimizer and not leader.others and not leader.by_backward:
            self.boundary()
            return
        ended = leader.stepped(optimizer, self.i)
        if ended == TAKEN:
            self.gap = True  # this step held the old lead's last work and the new one's first steps
        if ended is not None:
            self.boundary()

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
    def _start(self) -> None:
        self.started = True
        self.on_cuda = on_cuda = torch.cuda.is_available() and torch.cuda.is_initialized()
        self.device = f"cuda:{torch.cuda.current_device()}" if on_cuda else "cpu"
        ring = self.ring
        self.clock = CudaClock(torch.cuda, ph_col=ring.ph, mask=ring.mask) if on_cuda else CpuClock()
        self.losses = LossReader(on_cuda, RING)
        self.guard = SyncGuard.from_env(torch.cuda if on_cuda else None)
        if on_cuda:  # the hooks' marks become events on the step clock, read with the step
            self.timeline.mark = self.clock.mark
            self.timeline.guard = self.guard if self.guard.on else None
            self.mem = PhaseMemory(torch.cuda, torch.cuda.current_device())
            self.mem_at = self.mem.at
        if self.guard.on:
            self.emitter.emit(events.WARNING, text=f"{SYNC_DEBUG_ENV}={self.guard.level}: a "
                              "host-device sync in tuimon's hooks fails this run")
        s = self.settings
        self.emitter.emit_now(
            events.RUN_STARTED, pid=os.getpid(), mode=s.mode, precision=s.precision,
            amp_dtype=None, grad_scaler=None, device=self.device,
            device_name=device_name(torch, self.device), **versions(torch),
            recipe=s.program.name or "script",
            script=list(s.program.command) or None, params=None, batch_size=None, image_size=None,
            seed=s.seed, steps=self.steps_asked, duration=self.duration, round=s.length.round,
            warmup=s.warmup, threads=torch.get_num_threads(), extra={},
            notes=list(s.hooks.notes), **self._rank_fields(),
            **({"fixes": list(self.fixes.names)} if self.fixes and self.fixes.names else {}))
        if self.make_profiler is not None:
            self.profiler = self.make_profiler()
            self.profiler.outer = True  # captures name the modules outside the trained one
        if s.profile.count_flops and self.ident is None and self.forward is not None:
            from tuimon.runner.script.flop_catch import FlopCatch

            self.at_boundary = FlopCatch(self, self.forward)
        self._phase = "warmup"
        self.emitter.emit_now(events.PHASE, phase="warmup")
        self.gap = self.validating.since is not None  # a pass before training: Lightning's sanity check
        if self.turns.on:  # the interleaved schedule: step 0 waits for its turn too
            self._booted = None  # waiting is not "no optimizer step" (hooks' _no_step_watch)
            try:
                self._obey("pause", turn=True)
            finally:
                self._booted, self._compiled_at_boot = time.monotonic(), self.watch.total_s
            self.turns.begin(0)
            if self.profiler is not None:
                self.profiler.turn_began()
        self._began = time.monotonic()
        self.clock.start()
        self._t0 = time.perf_counter()
        self.timeline.begin()

    def _rank_fields(self) -> dict:
        """A rank's run_started: who it is in the job, and the process group's backend."""
        if self.ident is None:
            return {}
        backend = None
        with contextlib.suppress(Exception):  # not initialised (yet): said as None
            import torch.distributed as dist

            if dist.is_available() and dist.is_initialized():
                backend = str(dist.get_backend())
        return {**self.ident, "backend": backend}

    def boundary(self) -> None:
        """The lead optimizer stepped: step ``i`` ended here and step ``i + 1`` starts."""
        if not self.enabled:
            return
        if not self.started:
            self._start()
        guard = self.guard
        if guard.on:
            guard.ours()
        i, ring = self.i, self.ring
        k = i & ring.mask
        if self.on_cuda:
            self.clock.stop(self.timeline.unseen())  # the clock splits it once it is done
        else:
            self.clock.stop()
            ring.ph[k] = self.timeline.end()
        if self.boundaries == 0 and self.first_step is not None:
            self.first_step()
        self.validating.since = None  # training (Validating.training(), without a call)
        ring.t[k] = time.time()
        ring.data_ms[k] = self.data_s * 1000.0
        compile_ms = val_ms = 0.0
        if self.watch.count != self._compiles:
            self._compiles = self.watch.count
            compile_ms = self.watch.take_step_compile_ms()  # training's: a validation pass's apart
            val_ms = self.watch.take_step_val_ms()
        if self.held or self.gap:
            self.gap = self.recurring.gap(i, self.held, bool(val_ms), self.note) or self.gap
        elif self.recurring.before:
            self.recurring.before = 0
        if not self.backwards and self.fetched:  # no backward() seen: what it fetched
            self.samples = self.fetched.take_all()
        elif self.gap:
            self.fetched.after_gap()
        ring.n[k] = self.samples
        ring.loss[k] = self.loss
        if ring.pre is not None:
            ring.pre[k] = ((self.backward_at - self._t0) * 1000.0 if self.backward_at >= self._t0
                           else None)
        if self.train_data is None:
            self.train_data = self.last_data
        profiled = result = None
        if self.profiler is not None and self.profiler.capture is not None:
            profiled, result = self.profiler.after_step(i, self.watch.count)
        if compile_ms or val_ms:
            self.turns.compiled()  # a compile is not a turn
        if compile_ms or profiled or self.gap:
            ring.extra[i] = (compile_ms, profiled, self.gap)
        if i == self.mem_at:  # a memory step: kept out of the step times, its figures said
            ring.extra[i] = (compile_ms, profiled, self.gap, 1)
            self.timeline.mark = self.clock.mark
            found = self.mem.end(i, bool(compile_ms))
            self.mem_at = self.mem.at
            self.emitter.emit(events.MEMORY, **self.mem.window())  # the window's peaks, kept
            if found is not None:
                self.emitter.emit(events.MEMORY_PHASES, **found)
        # Said once two steps in a row, neither kept apart, held the same count: step 0 holds
        # only part of a GAN's losses, and a gap (an optimizer's take-over) lumps several steps.
        if self.backwards > 1 and self.backwards == self._last_backwards and not self.gap \
                and not self.leader.by_backward and not self._accum_said:
            self._accum_said = True
            self.note(f"{self.backwards} backward() calls per optimizer step (gradient accumulation, "
                      "or several losses): a step here is one optimizer step, and its loss the "
                      "last backward()'s", backwards=self.backwards)
        self._last_backwards = 0 if self.gap else self.backwards
        self.data_s, self.samples, self.gap, self.backwards, self.loss = 0.0, 0, False, 0, None
        self.held = 0
        self.i = i = i + 1
        self.boundaries += 1
        emitter = self.emitter
        if result is not None:
            _emit_ready(emitter, self.clock.ready(), ring, self.losses, i, self.warmup)
            emitter.emit_now(events.PROFILE, **result)
        phase = "warmup" if i < self.warmup else "steady"
        if phase != self._phase:
            self._phase = phase
            emitter.emit_now(events.PHASE, phase=phase)
        if i >= ring.first + ring.mask or emitter.flush_due():
            _emit_ready(emitter, self.clock.ready(), ring, self.losses, i, self.warmup)
            emitter.emit(events.MEMORY, **peak_memory(self.device))
            emitter.flush()
        if self.at_boundary is not None and self.at_boundary(i):  # outside every step's clock
            self.at_boundary = None
        try:
            self._between(i)
        finally:
            if guard.on:
                guard.theirs()
        self.clock.start()
        self._t0 = time.perf_counter()
        if self.on_cuda:  # the CPU's spans need no start: end() left the parts at zero
            self.timeline.begin()
            if i == self.mem_at:  # the hooks' marks read the allocator too, this step
                if guard.on:
                    guard.ours()
                self.mem.begin()
                if guard.on:
                    guard.theirs()
                self.timeline.mark = self.mem.marker(self.clock.mark)

    def _between(self, i: int) -> None:
        """At a boundary, outside every step: the end, control lines, turns, the profiler."""
        if i >= self.steps:  # first: a turn due at the last step would only wait for nothing
            self.stop("steps")
        now = time.perf_counter()
        if now >= self._poll_at:
            command = self.control.poll()
            if command is None:
                self._poll_at = now + POLL_S
            else:
                self._poll_at = 0.0
                self._obey(command)
        if i >= self.control.at:  # a job's pause-at / stop-at: every rank acts at this step
            self._obey(self.control.due(i))
        if self.turns.on and self.turns.over(i):
            self._obey("pause", turn=True)
            self.turns.begin(i)
            if self.profiler is not None:
                self.profiler.turn_began()
        if self.duration is not None:
            spent = self.control.paused_s + (self.profiler.overhead_s if self.profiler else 0.0)
            if self.settings.length.steady_duration:  # a sweep's budget: compiles aside
                spent += self.watch.total_s
            if time.monotonic() - self._began - spent >= self.duration:
                self.stop("duration")
        if self.profiler is not None:
            capture, opened = self.profiler.begin_step(i, self.watch.count)
            if opened is not None:
                self.emitter.emit_now(events.PROFILE, **opened)

    def _obey(self, command: str, turn: bool = False) -> None:
        if obey(command, self.control, self.emitter, self._phase, self.flush_measured,
                self.profiler, turn=turn, i=self.i):
            self.stop(self.control.stop_reason or "stopped")

    def stop(self, reason: str) -> None:
        self.reason = reason
        self.flush_measured()
        self.enabled = False  # whatever the script does while it winds down is not measured
        raise StopScript(f"tuimon: {reason}")
