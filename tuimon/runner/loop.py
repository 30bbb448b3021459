"""The training loop of one variant: compile mode, precision, warm-up, steps, events.

Step events are buffered and flushed a few times a second. On CUDA nothing here synchronises
per step: step times come from CUDA events and the loss from an async copy into pinned memory,
both read once the GPU has passed them.

Control lines from the parent (pause / resume / stop) are read at a step boundary (the first
one 50 ms after the last read: POLL_S), after the step's clock stopped and before the next one
starts, so a pause never lands inside a step time.

The per-step work that is tuimon's own is kept small (bench/hot_path.py measures it, issue 18):
steps go into preallocated ring columns (runner/steps.py) and become events only at a flush.
"""

from __future__ import annotations

import contextlib
import time

import torch

from tuimon import events
from tuimon.runner.compile_watch import CompileWatch
from tuimon.runner.control import EOF, Control
from tuimon.runner.emitter import Emitter
from tuimon.runner.memory_phases import NEVER, PhaseMemory, graph_pool, measured_step
from tuimon.runner.profiling import Profiler, parse_command
from tuimon.runner.steps import (  # noqa: F401 - BatchCycle, to_device, samples_in: loop's API too
    BatchCycle,
    LossReader,
    StepRing,
    _emit_ready,
    _fixed_samples,
    _in_place,
    _same,
    mover,
    samples_in,
    to_device,
)
from tuimon.runner.syncdebug import ENV as SYNC_DEBUG_ENV
from tuimon.runner.syncdebug import SyncGuard
from tuimon.runner.timing import CpuClock, CudaClock
from tuimon.runner.trainer import (  # noqa: F401 - the loop's API: runner/__main__, tests, bench
    LoopSettings,
    Trainer,
    amp_dtype,
    param_count,
    peak_memory,
)
from tuimon.runner.turns import Turns

RING = 4096  # steps held between two flushes, at most: a full ring flushes (power of two)
# The control fd is read at the first step boundary this long after the last read: a read is a
# syscall, ~5-12 µs right after a step on a small VM, while a pause can wait 50 ms.
POLL_S = 0.05


def run(trainer: Trainer, emitter: Emitter, watch: CompileWatch, control: Control | None = None,
        profiler: Profiler | None = None, guard: SyncGuard | None = None, first=None) -> str:
    """Train until the step count or duration is reached, or the parent says stop; returns why.

    ``guard`` (default: from TUIMON_SYNC_DEBUG, CUDA only) checks tuimon's own per-step work for
    host-device syncs, not the recipe's step nor a profiler capture; see syncdebug.py.

    The hot path (bench/hot_path.py measures it): per step, two clock reads around the step, two
    around the batch hand-over and three where the step's parts end (runner/phases.py), the loss
    capture, five stores into preallocated ring columns, and a few compares (a control read due,
    a profiler capture due, a flush due, the phase).
    Step events are built and encoded only when the emitter flushes, a few times a second.

    ``first()``: work before the first step, outside every step (the FLOP count, runner/
    flop_event.py), in the run's first turn when it takes turns (its neighbours wait then);
    returns the seconds it took, kept out of a --duration."""
    s = trainer.settings
    control = control or Control(None)
    on_cuda = trainer.device_type == "cuda"
    guard = guard or SyncGuard.from_env(torch.cuda if on_cuda else None)
    if guard.on:
        emitter.emit(events.WARNING, text=f"{SYNC_DEBUG_ENV}={guard.level}: a host-device sync in "
                     "tuimon's per-step work fails this run")
    losses = LossReader(on_cuda, RING)
    ring = StepRing(RING, pre=trainer.ranked)
    # The step's phases: on the CPU the loop reads the trainer's marks (ph_col); on CUDA each
    # mark records an event and the clock splits the step once it is done (runner/timing.py).
    clock = CudaClock(torch.cuda, ph_col=ring.ph, mask=ring.mask) if on_cuda else CpuClock()
    cuda_mark = clock.mark if on_cuda else None
    if on_cuda:
        def mark() -> float:
            cuda_mark()
            return time.perf_counter()

        trainer.mark = mark
    # Memory per phase (CUDA): a few steps kept out of the steady state (runner/memory_phases.py).
    mem = PhaseMemory(torch.cuda, _index(trainer.device)) if on_cuda else None
    mem_at = mem.at if mem is not None else NEVER
    next_batch = BatchCycle(trainer.recipe.batches).next
    move = mover(trainer.device)
    if not on_cuda and _in_place(trainer.recipe.batches, move):
        move = _same  # a fixed list of batches already there: handed over as they are
    phase = {"now": "compiling" if s.mode != "eager" else "warmup"}
    emitter.emit_now(events.PHASE, phase=phase["now"])

    steady_compiles = [0]

    def compiling(compile_id: str, backward: bool = False) -> None:
        # Said at once (not buffered): a compile can take minutes and the viewer should know.
        if phase["now"] == "steady":
            steady_compiles[0] += 1
            if steady_compiles[0] in (2, 10, 100):  # a run that keeps recompiling is not measured
                emitter.emit(events.WARNING, text=f"recompiled {steady_compiles[0]} times in steady "
                             f"state (latest {compile_id}): its step times are unreliable")
        phase["now"] = "compiling"
        emitter.emit_now(events.PHASE, phase="compiling", compile_id=compile_id, backward=backward)

    watch.on_start = compiling

    def before_pause() -> None:
        _before_pause(emitter, clock, ring, losses, i, s.warmup, trainer.device, profiler, watch)

    # Locals for the hot path: each one a load instead of an attribute or a global lookup.
    steps = s.steps if s.steps is not None else float("inf")
    warmup, duration = s.warmup, s.duration
    turns = Turns(s.turns, s.turn_s, steps, duration, first_only=s.turn_first)
    taking_turns = turns.on
    guarded = guard.on
    step, recipe = trainer.step, trainer.recipe
    fixed_n = recipe.samples_per_batch or _fixed_samples(recipe)
    perf, wall = time.perf_counter, time.time
    mask, t_col, data_col, n_col, loss_col = ring.mask, ring.t, ring.data_ms, ring.n, ring.loss
    poll_at = 0.0  # when the control fd is read next (perf_counter); 0: at the next boundary
    profile_at = 0  # the first step at which the profiler may open a capture (begin_step)
    flush_by = RING - 1  # a ring this full flushes, whatever the clock says
    compiles = watch.count
    at = control.at  # the step of a job's next scheduled pause or stop (infinite: none)
    pre_col = ring.pre  # a rank's time to backward(), per step (None outside a job)
    ph_col = None if on_cuda else ring.ph  # the CPU's phases, per step (the CUDA clock fills its own)
    tr = trainer
    started = time.monotonic()
    reason = "steps"
    i = 0  # steps recorded in the ring so far (the step running now, while it runs)
    try:
        if first is not None and not taking_turns:
            started += first()  # a stop's SIGINT inside it is a stop, as inside a step
        while i < steps:
            if guarded and (profiler is None or profiler.capture is None):
                guard.ours()
            if taking_turns and (i == 0 or turns.over(i)):
                profile_at = poll_at = 0  # a request taken during the wait starts at once
                if obey("pause", control, emitter, phase["now"], before_pause, profiler, turn=True,
                        i=i):
                    reason = control.stop_reason or "stopped"  # stopped while waiting its turn
                    break
                if first is not None and i == 0:  # in its first turn, before the turn's clock
                    started += first()
                turns.begin(i)
                if profiler is not None:
                    profiler.turn_began()
                at = control.at
            # A step boundary: the clock is not running. Reading the fd costs a syscall, so it is
            # read every POLL_S at most; after a line, at the next boundary again (lines queue).
            now = perf()
            if now >= poll_at:
                command = control.poll()
                if command is None:
                    poll_at = now + POLL_S
                else:
                    profile_at = poll_at = 0
                    if obey(command, control, emitter, phase["now"], before_pause, profiler, i=i):
                        reason = control.stop_reason or "stopped"
                        break
                    at = control.at
            if i >= at:  # a job's pause-at / stop-at: every rank acts at this same step
                if obey(control.due(i), control, emitter, phase["now"], before_pause, profiler, i=i):
                    reason = control.stop_reason or "stopped"
                    break
                at = control.at
            capture = None
            if profiler is not None and (i >= profile_at or profiler.capture is not None):
                capture, opened = profiler.begin_step(i, watch.count)
                # Open (or one failed to start: the next may be queued): look again next step.
                profile_at = i + 1 if capture is not None or opened is not None else profiler.next_step(steps)
                if capture is not None and guarded:
                    guard.theirs()  # torch.profiler syncs as a capture ends: a cost asked for
                if opened is not None:
                    emitter.emit_now(events.PROFILE, **opened)
            if capture is None or not capture.recording:  # the plain path: no label, no hook
                clock.start()
                t_data = perf()
                batch = move(next_batch())
                t_moved = perf()
                data_ms = (t_moved - t_data) * 1000.0
                if cuda_mark is not None:
                    cuda_mark()  # the data part ends (an event: the step's marks follow it)
                if guarded:
                    guard.theirs()  # the recipe's step may sync as it likes
                loss = step(batch) if i != mem_at else measured_step(trainer, mem, batch, guard)
                if guarded and capture is None:
                    guard.ours()
                captured = losses.capture(i, loss)
                clock.stop()
                m_f = tr.m_f
                if ph_col is not None:
                    # A step that did not mark its parts (a stand-in step) has no split.
                    ph_col[i & mask] = ((data_ms, (m_f - t_moved) * 1000.0, (tr.m_b - m_f) * 1000.0,
                                         (tr.m_o - tr.m_b) * 1000.0) if m_f >= t_moved else None)
                if pre_col is not None:
                    pre_col[i & mask] = (m_f - t_data) * 1000.0
            else:
                clock.start()
                t_data = perf()
                with capture.label("data"):
                    batch = move(next_batch())
                t_moved = perf()
                data_ms = (t_moved - t_data) * 1000.0
                if cuda_mark is not None:
                    cuda_mark()
                loss = trainer.profiled_step(batch, capture)
                if i == mem_at:  # not in a capture: the next step
                    mem_at = mem.at = i + 1
                with capture.label("loss read"):
                    captured = losses.capture(i, loss)
                clock.stop()
                if ph_col is not None:  # the profiler's cost is in these parts: kept apart
                    m_f = tr.m_f
                    ph_col[i & mask] = ((data_ms, (m_f - t_moved) * 1000.0, (tr.m_b - m_f) * 1000.0,
                                         (tr.m_o - tr.m_b) * 1000.0) if m_f >= t_moved else None)
                if pre_col is not None:
                    pre_col[i & mask] = None
            ended = wall()
            profiled = result = None
            if capture is not None:  # outside the step's time: the profiler's own bookkeeping
                profiled, result = profiler.after_step(i, watch.count)
            k = i & mask
            t_col[k] = ended
            data_col[k] = data_ms
            n_col[k] = fixed_n or samples_in(batch, recipe)
            loss_col[k] = captured
            if watch.count != compiles or profiled:  # a compile ran (count moved), or a capture
                compiles = watch.count
                compile_ms = watch.take_step_compile_ms()
                if compile_ms or profiled:
                    ring.extra[i] = (compile_ms, profiled)
                if compile_ms:
                    turns.compiled()  # a compile is not a turn
            if i == mem_at:  # kept out of the step times: its memory reads are in it
                compile_ms, profiled = ring.extra.get(i, (0.0, None))[:2]
                ring.extra[i] = (compile_ms, profiled, 0, 1)
                found = mem.end(i, bool(compile_ms))
                mem_at = mem.at
                emitter.emit(events.MEMORY, **mem.window())  # the window's peaks, across its resets
                if found is not None:
                    emitter.emit(events.MEMORY_PHASES, **found)
            step_phase = "warmup" if i < warmup else "steady"
            i += 1  # step i-1 is in the ring: a flush from here on hands it over
            if result is not None:  # a capture finished: its steps first, then its tables
                _emit_ready(emitter, clock.ready(), ring, losses, i, warmup)
                emitter.emit_now(events.PROFILE, **result)
            if step_phase != phase["now"]:
                # At once after a compile: the supervisor's hang watch restarts its clock then.
                emit = emitter.emit_now if phase["now"] == "compiling" else emitter.emit
                phase["now"] = step_phase
                emit(events.PHASE, phase=step_phase)
            if i >= flush_by or emitter.flush_due():
                _emit_ready(emitter, clock.ready(), ring, losses, i, warmup)
                flush_by = ring.first + mask
                emitter.emit(events.MEMORY, **peak_memory(trainer.device))
                emitter.flush()
            if duration is not None:
                # Time spent starting and finishing captures is outside every step; not run time.
                spent = control.paused_s + (profiler.overhead_s if profiler is not None else 0.0)
                if s.steady_duration:  # a sweep's budget sized the duration with compiles apart
                    spent += watch.total_s
                if time.monotonic() - started - spent >= duration:
                    reason = "duration"
                    break
    except KeyboardInterrupt:
        guard.restore()
        reason = "stopped"  # by the supervisor, at its request
    except BaseException:
        guard.restore()
        # The step failed: still hand over every step measured before it, then report.
        with contextlib.suppress(Exception):
            _emit_measured(emitter, clock, ring, losses, i, warmup, trainer.device)
        with contextlib.suppress(Exception):
            _end_capture(profiler, watch, emitter)
        raise
    guard.restore()
    if on_cuda and s.mode != "eager":  # the CUDA-graph pool, once, outside every step
        emitter.emit(events.MEMORY_PHASES, **graph_pool(_index(trainer.device)))
    _emit_measured(emitter, clock, ring, losses, i, warmup, trainer.device)
    _end_capture(profiler, watch, emitter)
    return reason


def _index(device: str) -> int:
    index = torch.device(device).index
    return torch.cuda.current_device() if index is None else index


def _before_pause(emitter, clock, ring, losses, recorded, warmup, device, profiler, watch) -> None:
    # The viewer gets every step measured before the pause, and a capture open now ends here with
    # what it recorded (its profiler would otherwise count the pause into a step).
    _emit_measured(emitter, clock, ring, losses, recorded, warmup, device)
    _end_capture(profiler, watch, emitter)


def _end_capture(profiler: Profiler | None, watch: CompileWatch, emitter: Emitter) -> None:
    """The run ends inside a capture window: stop it, report what it recorded."""
    result = profiler.abort(watch.count) if profiler is not None else None
    if result is not None:
        emitter.emit_now(events.PROFILE, **result)


def obey(command: str, control: Control, emitter: Emitter, phase: str, flush,
          profiler: Profiler | None = None, turn: bool = False, i: int | None = None) -> bool:
    """Apply one control line at a step boundary; True when the run must stop now.

    ``turn``: not the user's pause but the end of a turn in the interleaved schedule ("pause
    turn", a job's scheduled turn end, says the same). ``i``: the steps done so far; a rank's
    paused event says it (``at``), and a ``stop-at`` it cannot wait for stops it there."""
    if command in ("stop", EOF):
        return True
    if command.startswith("profile"):
        _profile_request(command, emitter, profiler)
        return False
    if control.schedule(command):  # pause-at / stop-at: the loop takes it at its step (due)
        return False
    if command == "pause turn":
        command, turn = "pause", True
    if command == "resume":  # while running: a job's pause called off before it landed
        control.cancel_pause()
        return False
    if command != "pause":
        return False  # resume while running, or a line this runner does not know
    flush()  # the viewer gets every step measured before the pause (and an open capture ends)
    fields = {"turn": True} if turn else {}
    if control.ranked and i is not None:
        fields["at"] = i
    emitter.emit_now(events.PHASE, phase="paused", **fields)
    since = time.monotonic()
    try:
        while True:
            command = control.wait()
            if command in ("stop", EOF):
                return True
            if command.startswith("profile"):  # taken now, starts once resumed
                _profile_request(command, emitter, profiler)
            elif (control.schedule(command) and i is not None and control.at <= i
                  and control.due(i) == "stop"):  # every rank is paused here: stop here
                return True
            if command == "resume":
                emitter.emit_now(events.PHASE, phase=phase)
                return False
    finally:
        control.paused_s += time.monotonic() - since


def _profile_request(command: str, emitter: Emitter, profiler: Profiler | None) -> None:
    try:
        options = parse_command(command)
        if options is None:
            return  # not a profile line after all ("profiles..."): unknown, ignored
        if profiler is None:
            raise ValueError("this runner has no profiler")
        profiler.request(options)
    except ValueError as exc:
        emitter.emit_now(events.PROFILE, state="failed", capture=None, error=str(exc), notes=[])


def _emit_measured(emitter, clock, ring, losses, recorded, warmup, device) -> None:
    _emit_ready(emitter, clock.drain(), ring, losses, recorded, warmup)
    emitter.emit(events.MEMORY, **peak_memory(device))
    emitter.flush()
