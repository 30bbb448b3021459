"""One variant's steps, whoever drives them: the recipe runner's own loop (runner/recipe_loop.py)
or the hooks inside a user's script (runner/script/). A driver stops the step's clock where a
step ends and says with what (``boundary``: its loss, samples, data wait, parts); the engine owns
the rest: the ring of measured steps and their flush into events, the phase, the control lines,
turns, ``--steps`` and ``--duration``, the run's start and end, and its components (the profiler
window, the memory step, the FLOP count: ``Component``), each written once for both drivers.

The hot path is what every step pays (bench/hot_path.py measures it): the ring's stores, one
compare of the compile count and one each of the step count and the clock against the next
boundary anything is due at (``_due_i``, ``_due_t``), and the clock started again. A flush, a
control read, a turn's end, a capture, the memory step and the end are ``_service``'s, at the
boundaries where they are due, outside every step's clock.
"""

from __future__ import annotations

import contextlib
import math
import os
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

import torch

from tuimon import events
from tuimon.envvars import SYNC_DEBUG as SYNC_DEBUG_ENV
from tuimon.runner.control_lines import EOF, ControlLines
from tuimon.runner.device import device_name
from tuimon.runner.emitter import Emitter
from tuimon.runner.gc_pauses import GcPauses
from tuimon.runner.memory_phases import NEVER, MemoryStep, peak_memory
from tuimon.runner.steps import LossReader, StepRing, emit_ready
from tuimon.runner.syncdebug import SyncGuard
from tuimon.runner.timing import CpuClock, CudaClock
from tuimon.runner.torch_env import versions
from tuimon.runner.turns import Turns

if TYPE_CHECKING:  # types alone: the profiler is imported when a run has one
    from tuimon.runner.compile_watch import CompileWatch
    from tuimon.runner.profiling.capture import Capture
    from tuimon.runner.profiling.profiler import Profiler
    from tuimon.settings import RunSettings

RING = 4096  # steps held between two flushes, at most: a full ring flushes (power of two)
# The control fd is read at the first boundary this long after the last read: a read is a
# syscall, ~5-12 µs right after a step on a small VM, while a pause can wait 50 ms.
POLL_S = 0.05
WARN_AT = (2, 10, 100)  # steady-state recompiles said: a run that keeps recompiling is not measured
# Steps without a training compile after which the compiles count as settled: a compile later
# than that is a recompile in steady state (new shapes in the first steps are still warm-up).
SETTLED = 20


class Component(Protocol):
    """A measurement the engine runs at step boundaries, outside every step's clock: ``start``
    as training begins, ``boundary`` before step ``i`` whenever ``i >= due``, ``end`` as the run
    ends (docs/development.md, "How to add a per-step measurement")."""

    due: int = NEVER  # the step count at whose boundary it acts next

    def start(self, engine: StepEngine) -> None:
        pass

    def boundary(self, engine: StepEngine, i: int) -> None:
        pass

    def end(self, engine: StepEngine) -> None:
        pass


class StepEngine:
    def __init__(self, settings: RunSettings, emitter: Emitter, control: ControlLines, watch: CompileWatch, *,
                 own_steps: int | None = None, min_warmup: int = 0, ranked: bool = False) -> None:
        """``settings``: the run's (tuimon/settings.py); ``watch``: its CompileWatch;
        ``own_steps``: a recipe's own length, without --steps / --duration; ``min_warmup``: the
        steps labelled warm-up at least; ``ranked``: a rank of a job (its steps say pre_ms)."""
        self.settings = settings
        self.emitter = emitter
        self.control = control
        self.watch = watch  # runner/compile_watch.py: compiles started, their time
        self.trace = None  # a compiled variant's TraceListener: graph breaks, recompiles
        # Round 1 of a variant's processes runs the whole length asked for, the others a K-th.
        steps, self.duration = settings.length.this_process(own_steps)
        self.steps_asked = steps  # None: the recipe's or the script's own end
        self.steps = steps if steps is not None else math.inf
        duration = self.duration
        self.warmup = max(min_warmup, settings.fixed_warmup)
        t = settings.turns
        self.turns = Turns(t.turn_steps, t.turn_s, steps, duration, first_only=t.turn_first)
        self.ring = StepRing(RING, pre=ranked)
        self.components: list[Component] = [GcPauses()]  # every run's; a driver adds its own
        self.window: CaptureWindow | None = None  # the CaptureWindow component, when the run has a profiler
        self.profiler: Profiler | None = None  # ... and its Profiler (runner/profiling/)
        self.capture: Capture | None = None  # the capture that began at this step (a recipe labels its parts)
        self.memory: MemoryStep | None = None  # CUDA: the MemoryStep component (memory_phases.py) ...
        self.mem_step = NEVER  # ... and the step it measures now
        # the driver's: callable(mark), where a part of a step ends (CUDA)
        self.use_marks: Callable[[Callable[..., Any]], None] | None = None
        self.device, self.on_cuda = "cpu", False
        self.clock: CpuClock | CudaClock = CpuClock()
        self.losses: LossReader | None = None
        self.guard = SyncGuard(None, None)
        self.i = 0  # steps recorded in the ring so far
        self.phase = "building"
        self.reason: str | None = None  # why the run ended (steps, duration, stopped)
        self._compiles = 0  # the watch's count the last boundary saw
        self._steady_compiles = 0
        self._compiled_at: int | None = None  # the step of the last training compile
        self._settled = False  # SETTLED steps passed without one
        self._due_i, self._due_t = 0, 0.0  # the next boundary anything is due at
        self._poll_at = 0.0  # when the control lines are read next (perf_counter)
        self._began = time.perf_counter()  # training's start: a --duration counts from here

    def add(self, component: Component) -> Component:
        self.components.append(component)
        return component

    # ---- the run's start ----------------------------------------------------------------------
    def open(self, device: str, on_cuda: bool, fields: dict[str, Any],
             guard: SyncGuard | None = None) -> None:
        """Training is about to begin on ``device``: its clock, and its ``run_started`` (what
        every run says, then the driver's ``fields``); ``guard``: the environment's otherwise."""
        self.device, self.on_cuda = device, on_cuda
        ring = self.ring
        self.clock = CudaClock(torch.cuda, ph_col=ring.ph, mask=ring.mask) if on_cuda else CpuClock()
        self.losses = LossReader(on_cuda, RING)
        self.guard = guard or SyncGuard.from_env(torch.cuda if on_cuda else None)
        if self.guard.on:
            self.emitter.emit(events.WARNING, text=f"{SYNC_DEBUG_ENV}={self.guard.level}: a host-"
                              "device sync in tuimon's per-step work fails this run")
        s = self.settings
        self.emitter.emit_now(
            events.RUN_STARTED, pid=os.getpid(), mode=s.mode, precision=s.precision,
            device=device, device_name=device_name(torch, device), **versions(torch),
            seed=s.seed, steps=self.steps_asked, duration=self.duration, round=s.length.round,
            warmup=s.warmup, threads=torch.get_num_threads(), **fields)

    def begin(self, phase: str = "warmup") -> str | None:
        """The first step is next: its phase said, the components started, its turn waited for
        (then what is due before it: the FLOP count, a capture); returns why the run ended
        instead (stopped while waiting for its first turn), else None with the clock started."""
        self.phase = phase
        self.emitter.emit_now(events.PHASE, phase=phase)
        self._began = time.perf_counter()  # a --duration leaves the first turn's wait out (paused_s)
        for c in self.components:
            c.start(self)
        if self.turns.on and not self._obey("pause", turn=True):
            self._turn_began(0)
        if self.reason is None:
            self._service(0)
        if self.reason is None:
            self.clock.start()
        return self.reason

    def compiling(self, compile_id: str, backward: bool = False, outside: bool = False) -> None:
        """Dynamo starts a compile (runner/compile_watch.py): said at once, not buffered (it can
        take minutes, and the supervisor's hang watch restarts its clock once it is over).
        ``outside``: a script's compile outside training (a validation pass, sampling), which
        is no recompile of training's (the summary keeps it apart too)."""
        if self._compiled_at is not None and self.i - self._compiled_at >= SETTLED:
            self._settled = True  # from here every training compile is a recompile
        if not outside and not backward:
            self._compiled_at = self.i
        if self.phase == "steady" and self._settled and not outside:
            self._steady_compiles += 1
            if self._steady_compiles in WARN_AT:
                self.emitter.emit(events.WARNING, text=f"recompiled {self._steady_compiles} times in "
                                  f"steady state (latest {compile_id}): its step times are unreliable")
        self.emitter.emit_now(events.PHASE, phase="compiling", compile_id=compile_id, backward=backward)
        if self.phase != "building":
            self.phase = "compiling"
            self._due_i = 0  # the next boundary says the phase again: the compile is over

    # ---- the boundary ------------------------------------------------------------------------
    def boundary(self, loss: object, n: int, data_ms: float, ph: object = None, pre_ms: float | None = None,
                 gap: bool = False) -> str | None:
        """Step ``i`` ended (its driver stopped the clock), having trained on ``n`` samples with
        ``loss`` (as LossReader captured it), waited ``data_ms`` for its batch and spent ``ph`` in
        its parts (ms; CPU: on CUDA the clock splits the step); ``pre_ms``: a rank's time to its
        backward(); ``gap``: a step that held other work than training (a script's validation
        pass). Returns why the run ends here, or None: step ``i + 1`` began, its clock running."""
        guard = self.guard
        if guard.on:
            guard.ours()
        i, ring = self.i, self.ring
        k = i & ring.mask
        ring.t[k] = time.time()
        ring.data_ms[k] = data_ms
        ring.n[k] = n
        ring.loss[k] = loss
        if not self.on_cuda:
            ring.ph[k] = ph
        if ring.pre is not None:
            ring.pre[k] = pre_ms
        if gap or self.watch.count != self._compiles or self.capture is not None or i == self.mem_step:
            self._unusual(i, gap)
        self.i = i = i + 1
        if i >= self._due_i or time.perf_counter() >= self._due_t:
            self._service(i)
        if guard.on:
            guard.theirs()
        if self.reason is None:
            self.clock.start()
        return self.reason

    def _unusual(self, i: int, gap: bool) -> None:
        """Step ``i``'s rare facts, kept with it in the ring for its event: a compile in it, a
        capture that recorded it, a gap, a memory step."""
        compile_ms, profiled, result, mem = 0.0, None, None, 0
        watch = self.watch
        if watch.count != self._compiles:
            self._compiles = watch.count
            compile_ms = watch.take_step_compile_ms()  # training's: a validation pass's apart
            if watch.take_step_val_ms() or compile_ms:
                self.turns.compiled()  # a compile is not a turn
                self._due_t = 0.0
        if self.capture is not None:  # outside the step's time: the profiler's own bookkeeping
            assert self.profiler is not None  # its CaptureWindow opened the capture
            self.guard.theirs()  # torch.profiler syncs as a capture ends: a cost asked for
            profiled, result = self.profiler.after_step(i, watch.count)
            self.guard.ours()
            self.capture = None
        # kept out of the step times: its memory reads are in it
        if i == self.mem_step and self.memory is not None:
            mem = 1
            self.memory.ended(self, i, bool(compile_ms))
        if compile_ms or profiled or gap or mem:
            self.ring.extra[i] = (compile_ms, profiled, gap, mem)
        self._due_i = 0  # what is due next may have moved (a component's step, a turn's clock)
        if result is not None:  # a capture finished: its steps first, then its tables
            assert self.losses is not None  # open() came first
            emit_ready(self.emitter, self.clock.ready(), self.ring, self.losses, i + 1, self.warmup)
            self.emitter.emit_now(events.PROFILE, **result)

    def _service(self, i: int) -> None:
        """The boundary before step ``i`` (``i`` steps done), outside every step's clock: what is
        due there, then when anything is due next. Sets ``reason`` when the run ends here."""
        emitter = self.emitter
        phase = "warmup" if i < self.warmup else "steady"
        if i and phase != self.phase:
            # At once after a compile: the supervisor's hang watch restarts its clock then.
            (emitter.emit_now if self.phase == "compiling" else emitter.emit)(events.PHASE, phase=phase)
            self.phase = phase
        if i >= self.ring.first + self.ring.mask or emitter.flush_due():
            self.flush_measured(end_capture=False)
        if i >= self.steps:  # first: a turn due at the last step would only wait for nothing
            return self._end("steps")
        if self._commands(i):
            return None
        if self.turns.on and i and self.turns.over(i):
            if self._obey("pause", turn=True):
                return None
            self._turn_began(i)
        if self.duration is not None and time.perf_counter() - self._began - self._spent() >= self.duration:
            return self._end("duration")
        for c in self.components:
            if i >= c.due:
                c.boundary(self, i)
        self._plan(i)
        return None

    def _commands(self, i: int) -> bool:
        """The control lines due at this boundary: one sent (read every POLL_S at most; after a
        line, at the next boundary again: lines queue), and a job's pause-at / stop-at, which
        every rank takes at this same step. True when the run ends here."""
        control = self.control
        now = time.perf_counter()
        if now >= self._poll_at:
            command = control.poll()
            self._poll_at = now + POLL_S if command is None else 0.0
            if self._obey(command):
                return True
        return i >= control.at and self._obey(control.due(i))

    def _turn_began(self, i: int) -> None:
        self.turns.begin(i)
        if self.window is not None:
            self.window.profiler.turn_began()  # its automatic capture may open at this boundary
            self.window.due = 0

    def _plan(self, i: int) -> None:
        """When anything is due next: a step count (``_due_i``) and a clock time (``_due_t``)."""
        ring, turns = self.ring, self.turns
        due = min(self.steps, ring.first + ring.mask, self.control.at,
                  self.warmup if i < self.warmup else NEVER, *(c.due for c in self.components))
        if self.phase == "compiling":
            due = i + 1
        t = min(self._poll_at, self.emitter.next_flush())
        if turns.on:
            due = min(due, turns.next_step())
            t = min(t, turns.next_time())
        if self.duration is not None:
            t = min(t, self._began + self._spent() + self.duration)
        self._due_i, self._due_t = int(min(due, NEVER)), t

    def _spent(self) -> float:
        """Seconds since training began that were no training's: paused, waiting for a turn, the
        profiler's own work, and for a sweep's budget (steady_duration) compiling."""
        spent = self.control.paused_s + (self.profiler.overhead_s if self.profiler is not None else 0.0)
        if self.settings.length.steady_duration:
            spent += self.watch.total_s
        return spent

    def excluded(self, seconds: float) -> None:
        """``seconds`` of tuimon's own work between two steps (the FLOP count): no --duration's."""
        self._began += seconds

    def _end(self, reason: str) -> None:
        self.reason = reason
        self.flush_measured()

    # ---- control lines -----------------------------------------------------------------------
    def _obey(self, command: str | None, turn: bool = False) -> bool:
        """Apply one control line at a step boundary; True when the run ends here (``reason``).
        ``turn``: not the user's pause but the end of a turn in the interleaved schedule."""
        if command is None:
            return False
        control = self.control
        stopped = command in ("stop", EOF)
        if command.startswith("profile"):
            self.profile_request(command)
        elif control.schedule(command):  # pause-at / stop-at: taken at its step (``due``)
            pass
        elif command == "resume":  # while running: a job's pause called off before it landed
            control.cancel_pause()
        elif command in ("pause", "pause turn"):
            stopped = self._paused(turn or command == "pause turn")
        if stopped:
            self._end(control.stop_reason or "stopped")
        return stopped  # any other line: one this runner does not know, ignored

    def _paused(self, turn: bool) -> bool:
        """Paused at the boundary until resumed; True when stopped meanwhile."""
        self.flush_measured()  # the viewer gets every step measured before the pause
        control, i = self.control, self.i
        fields: dict[str, bool | int] = {"turn": True} if turn else {}
        if control.ranked:
            fields["at"] = i
        self.emitter.emit_now(events.PHASE, phase="paused", **fields)
        since = time.monotonic()
        self._poll_at = 0.0  # a line that came during the wait is read at once
        try:
            while True:
                command = control.wait()
                if command in ("stop", EOF):
                    return True
                if command.startswith("profile"):  # taken now, starts once resumed
                    self.profile_request(command)
                elif control.schedule(command) and control.at <= i and control.due(i) == "stop":
                    return True  # every rank is paused here: stop here
                if command == "resume":
                    self.emitter.emit_now(events.PHASE, phase=self.phase)
                    return False
        finally:
            control.paused_s += time.monotonic() - since

    def profile_request(self, command: str) -> None:
        """``profile [JSON options]``: a capture from the next boundary on."""
        from tuimon.runner.profiling import parse_command

        try:
            options = parse_command(command)
            if options is None:
                return  # not a profile line after all ("profiles..."): unknown, ignored
            if self.window is None:
                raise ValueError("this runner has no profiler")
            self.window.profiler.request(options)
            self.window.due = 0
        except ValueError as exc:
            self.emitter.emit_now(events.PROFILE, state="failed", capture=None, error=str(exc), notes=[])

    # ---- the run's end -----------------------------------------------------------------------
    def flush_measured(self, end_capture: bool = True) -> None:
        """Hand over every step measured so far and the memory peaks; with ``end_capture`` (a
        pause, the end) the last steps waited for, and what an open capture recorded (it would
        count a pause into a step)."""
        if self.losses is not None:
            with contextlib.suppress(Exception):
                times = self.clock.drain() if end_capture else self.clock.ready()
                emit_ready(self.emitter, times, self.ring, self.losses, self.i, self.warmup)
            with contextlib.suppress(Exception):
                self.emitter.emit(events.MEMORY, **peak_memory(self.device))
        if end_capture and self.profiler is not None:
            result = self.profiler.abort(self.watch.count)
            self.capture = None
            if result is not None:
                self.emitter.emit(events.PROFILE, **result)
        self.emitter.flush()

    def finish(self, reason: str, asked: bool = True) -> None:
        """The run ended (``reason``): the components' last word, its last steps, and
        ``finished``; ``asked``: whether the variant asked torch to compile anything (a compiled
        variant that compiled nothing says why)."""
        self.guard.restore()
        for c in self.components:
            with contextlib.suppress(Exception):
                c.end(self)
        self.flush_measured()
        watch, trace = self.watch, self.trace
        if asked and (text := watch.nothing_compiled(self.settings.mode)):
            self.emitter.emit_now(events.WARNING, text=text)
        self.emitter.emit_now(
            events.FINISHED, reason=reason, seconds=round(time.perf_counter() - self._began, 3),
            paused_s=round(self.control.paused_s, 3), compiles=watch.train_count,
            graph_breaks=trace.graph_breaks if trace else 0,
            recompiles=trace.recompiles if trace else 0, compile_s=round(watch.train_s, 3),
            val_compiles=watch.val_count, val_compile_s=round(watch.val_s, 3),
            val_recompiles=trace.val_recompiles if trace else 0,
            profile_s=round(self.profiler.overhead_s, 4) if self.profiler else 0.0)

    def failed(self, exc: BaseException, stage: str, traceback: str, where: str | None,
               **fields: Any) -> None:
        """The run failed in ``stage`` (build or step): the steps measured before it handed
        over, then what it failed of."""
        self.guard.restore()
        if stage == "step":
            self.flush_measured()
        emit_failure(self.emitter, exc, stage, traceback, where, **fields)


def emit_failure(emitter: Emitter, exc: BaseException, stage: str, traceback: str,
                 where: str | None, **fields: Any) -> None:
    """A ``failed`` event: what the run failed of (its kind, a CUDA OOM's figures), in which
    ``stage``, at ``where`` (the user's frame); ``fields``: what the driver adds (in_compile)."""
    from tuimon import failures
    from tuimon.runner.crash import cuda_memory

    memory = cuda_memory(exc)
    text = failures.plain(str(exc)).strip()  # a coloured message: its text
    emitter.emit_now(
        events.FAILED, stage=stage, error=type(exc).__name__,
        message=text.splitlines()[0][:500] if text else "", traceback=traceback, where=where,
        **failures.of_exception(exc, memory), **memory, **fields)


class CaptureWindow(Component):
    """The profiler's captures (runner/profiling/), asked for by a control line, a step
    (--profile-at) or tuimon's own automatic capture: each begins at a boundary
    (``Profiler.begin_step``) and the steps it records end at the engine's (``after_step``)."""

    def __init__(self, profiler: Profiler) -> None:
        self.profiler = profiler
        self.due = 0

    def start(self, engine: StepEngine) -> None:
        engine.window, engine.profiler = self, self.profiler

    def boundary(self, engine: StepEngine, i: int) -> None:
        profiler = self.profiler
        capture, opened = profiler.begin_step(i, engine.watch.count)
        engine.capture = capture
        # Open (or one failed to start: the next may be queued): look again next step.
        if capture is not None or opened is not None:
            self.due = i + 1
        else:  # the next step it has work at; a run without an end: none (an int, as NEVER is)
            due = profiler.next_step(engine.steps)
            self.due = NEVER if due == math.inf else int(due)
        if opened is not None:
            engine.emitter.emit_now(events.PROFILE, **opened)
