"""Runs a session: queues runner children, starts them per the schedule, applies control
commands, writes the store and hands every event to a sink.

Threads. ``run()`` is the loop thread: the only one that writes the store, calls the sink,
or starts, signals and reaps children. Each child's reader thread (session/child.py) and the
probe sampler only put into the inbox. The control methods (``add``, ``stop``, ``pause``,
``resume``, ``profile``, ``restart``, ``stop_all``, ``close``) may be called from any thread,
e.g. the TUI's: they put a command into the same inbox and return at once; the loop applies it
within a tick (0.1 s) and records a ``control`` event. A command that no longer applies when it arrives
(pause a finished run, stop a stopped one) is dropped without an event. ``states()`` is a
thread-safe snapshot. The sink is called on the loop thread: a UI must hand batches over to
its own thread rather than draw from there.

Run states: queued -> running (building, compiling, stepping) <-> paused, then done, stopped
or failed. "paused" is set when the runner says it paused (at its next step boundary), not
when asked. In the sequential schedule a paused run keeps the slot: the next run does not
start, since the paused one may resume and would then share the machine with it.

Stopping a run: a ``stop`` line first, so it ends at the next step boundary and loses nothing;
one whose step outlasts ``Plan.stop_line_s`` (a long compile) gets SIGINT (it stops mid-step and
still reports what it measured); ``Plan.stop_grace_s`` later, SIGKILL. A runner still building
(no run_started yet) has measured nothing and gets SIGKILL at once: a SIGINT inside ``import
torch`` can be swallowed by an optional import and resurface as a bogus build failure (seen:
RecursionError in a half-imported numpy), which would abort the session. A queued run that is
stopped never starts. Either way it is recorded as finished, reason "stopped".

When the store cannot be written (disk full, file too large, an I/O error; store.py), the
supervisor says so once in ``store_error``, refuses new runs and stops every run the normal way:
there is no point measuring what cannot be kept. Events that could not be written stay in
``store.unwritten`` (the end of session summary still uses them) and are retried with each later
write, in case room came back. ``store.tick()`` runs at least once per loop tick: the fsync at
most once a second, and recreating a session directory deleted under the session.
"""

from __future__ import annotations

import json
import os
import queue
import shutil
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from tuimon import events, failures
from tuimon.session.child import Child, log_tail
from tuimon.session.sampler import Sampler
from tuimon.session.store import SessionStore, StoreWriteError
from tuimon.variants import Variant

Sink = Callable[[list[dict]], None]

PROFILES = "profiles"  # the session's subdirectory for profiler captures' chrome traces
PROFILE_OPTIONS = {"wait": 0, "warmup": 0, "active": 1}  # whole numbers, at least this


def check_profile_options(options: dict) -> None:
    """ValueError for options the runner would refuse (it checks again)."""
    for key, value in options.items():
        if key in PROFILE_OPTIONS:
            if not isinstance(value, int) or isinstance(value, bool) or value < PROFILE_OPTIONS[key]:
                raise ValueError(f"profile option {key} must be a whole number >= {PROFILE_OPTIONS[key]}")
        elif key == "backward":
            if value not in (True, False, "all"):
                raise ValueError('profile option backward must be True, False or "all"')
        else:
            raise ValueError(f"unknown profile option {key!r}")


QUEUED, RUNNING, PAUSED, DONE, FAILED, STOPPED = "queued", "running", "paused", "done", "failed", "stopped"
TICK = 0.1  # seconds the loop waits for news before it looks at the queue and stop deadlines
_EVENTS, _EOF, _COMMAND = "events", "eof", "command"  # kinds of inbox items


def interrupt(signum, frame) -> None:
    """A SIGTERM handler for the process running ``Supervisor.run``: the loop then stops the
    runs as on Ctrl-C (by default SIGTERM would end it at once and orphan them)."""
    raise KeyboardInterrupt


@dataclass
class Plan:
    recipe: Path
    variants: list[Variant]
    schedule: str = "sequential"  # or "parallel"
    runner_args: list[str] = field(default_factory=list)  # --steps, --seed, ... for every run
    cache_dir: Path | None = None  # None: a fresh Inductor cache per run (honest cold compile)
    stop_grace_s: float = 10.0  # after SIGINT, before SIGKILL
    interval: float | None = 1.0  # probe sampling period, seconds; None: no probes
    stop_line_s: float = 3.0  # after a stop line, before SIGINT (a step that does not end)
    torch_trace: bool = False  # also write torch's structured trace (TORCH_TRACE) for tlparse
    turn_steps: int = 50  # interleaved schedule: steps a run takes per turn
    hang_s: float | None = 600.0  # warn when a stepping run sends no step for this long
    repeats: int = 1  # processes per variant, run in rounds (every variant once per round)


@dataclass
class Run:
    """The loop thread's record of one run."""

    id: str
    variant: Variant
    replaces: str | None = None
    after: str | None = None  # a restart starts only once the run it replaces has exited
    replicate: int | None = None  # --repeats: its round; a round starts once the one before ended
    child: Child | None = None
    stepping: bool = False  # run_started seen: the runner reads control lines from now on
    ended: bool = False  # its finished or failed event seen
    pause_asked: bool = False
    stop_asked: bool = False
    escalation: int = 0  # 1: SIGINT sent, 2: SIGKILL sent
    deadline: float | None = None  # when to escalate the stop, time.monotonic()
    waiting_turn: bool = False  # interleaved schedule: paused at the end of a turn
    # Hang watch: time.monotonic() of its last step, or of the news that it may step from now on
    # (started, a compile ended, resumed); None until it starts. Compiling does not count.
    last_step: float | None = None
    compiling: bool = False
    hung_said: bool = False


class Supervisor:
    def __init__(self, store: SessionStore, plan: Plan, sink: Sink | None = None,
                 gpu_probe=None) -> None:
        self.store = store
        self.plan = plan
        self.sink = sink or (lambda batch: None)
        self.build_failure: dict | None = None  # the first build-stage failure, if any
        self.failed_runs: list[str] = []
        self.interrupted = False
        self.store_error: str | None = None  # the first failed write of the store: runs stopped
        self._inbox: queue.Queue = queue.Queue()
        # Touched by callers' threads too, under the lock.
        self._lock = threading.Lock()
        self._states: dict[str, str] = {}
        self._variants: dict[str, Variant] = {}
        self._closed = False
        # The loop thread's alone.
        self._runs: dict[str, Run] = {}
        self._queue: list[str] = []  # run ids in start order
        self._live: dict[str, Run] = {}  # runs with a process (read by the sampler: live_pids)
        self._turn: str | None = None  # interleaved schedule: the run stepping now
        self._last_turn: str | None = None
        self._closing = False
        self._accepting = False  # commands are applied only while the loop runs
        # Round-major: with --repeats every variant runs once per round, so the rounds' processes
        # meet the same machine state and the combined interval sees process-to-process spread.
        rounds = range(1, plan.repeats + 1) if plan.repeats > 1 else [None]
        self._initial = [(self._allocate(v), v, k) for k in rounds for v in plan.variants]
        self._sampler = Sampler(plan.interval, self.live_pids,
                                lambda batch: self._inbox.put((_EVENTS, None, batch)),
                                gpu=gpu_probe) if plan.interval else None

    # ---- control, from any thread --------------------------------------------------------
    def add(self, variant: Variant, replaces: str | None = None) -> str:
        """Queue a new run of ``variant``; returns its run id. ``replaces`` is recorded in its
        ``run_queued`` event (a viewer shows it in that run's place); it stops nothing."""
        if replaces is not None:
            self._variant_of(replaces)  # must be a run of this session
        run = self._allocate(variant)
        self._inbox.put((_COMMAND, "add", run, variant, replaces))
        return run

    def restart(self, run: str, variant: Variant | None = None) -> str:
        """Stop ``run`` gracefully (if it is queued or live) and queue a new run of ``variant``
        (default: the same) that replaces it; returns the new run id. The new run goes to the
        front of the queue and starts once the old process has exited."""
        new = self._allocate(variant or self._variant_of(run))
        self._inbox.put((_COMMAND, "restart", run, new, self._variant_of(new)))
        return new

    def stop(self, run: str) -> None:
        """Stop a run at its next step boundary (a queued one never starts)."""
        self._command("stop", run)

    def pause(self, run: str) -> None:
        """Pause a live run at its next step boundary (a run still building: at its first)."""
        self._command("pause", run)

    def resume(self, run: str) -> None:
        self._command("resume", run)

    def dump(self, run: str) -> None:
        """Write the Python stacks of every thread of a live runner into its log (SIGUSR1 to
        its faulthandler): what a hung run is doing, without stopping it."""
        self._command("dump", run)

    def profile(self, run: str, **options) -> None:
        """Capture a torch.profiler window of a live run from its next step boundary.

        Options (each optional; the run's defaults from --profile-window / --profile-backward
        otherwise): wait, warmup, active (steps), backward (False, True: eager variants, or
        "all"). The runner reports with ``profile`` events (started, then done or failed)."""
        check_profile_options(options)
        self._variant_of(run)
        self._inbox.put((_COMMAND, "profile", run, dict(options)))

    def stop_all(self) -> None:
        """Stop every live run and drop the queue; a kept-open session goes on (add works)."""
        self._inbox.put((_COMMAND, "stop_all", None))

    def close(self) -> None:
        """Stop everything and end ``run()`` once every child has exited; add() is refused."""
        with self._lock:
            self._closed = True
        self._inbox.put((_COMMAND, "close", None))

    def states(self) -> dict[str, str]:
        """Run id -> queued | running | paused | done | failed | stopped, in the order added.

        The last three follow the runner's own finished / failed event (its process may take a
        moment more to exit; in the sequential schedule the next run starts after that)."""
        with self._lock:
            return dict(self._states)

    def live_pids(self) -> dict[str, int]:
        """Run id -> runner pid of the children alive now (read by the sampler thread)."""
        return {run: r.child.proc.pid for run, r in list(self._live.items())}

    # ---- the loop ------------------------------------------------------------------------
    def run(self, keep_open: bool = False) -> str:
        """Run the plan's variants per the schedule, and whatever is added meanwhile.

        keep_open=False (headless): returns once nothing is running or queued.
        keep_open=True (a TUI): keeps sampling and taking commands until ``close()``.
        Returns 'done', 'failed' (a run failed) or 'interrupted' (Ctrl-C).
        """
        for run, variant, replicate in self._initial:
            self._enqueue(run, variant, replicate=replicate)
        if self._sampler:
            self._sampler.start()
        try:
            self._loop(keep_open)
        except KeyboardInterrupt:  # Ctrl-C in the terminal: the CLI runs this on the main thread
            self.interrupted = True
            self._wind_down()
        except BaseException:
            self._wind_down()  # a bug on this side must not leave orphans behind
            raise
        finally:
            with self._lock:
                self._closed = True
            if self._sampler:
                self._sampler.stop()
        self._pump(0)  # the last samples
        status = "interrupted" if self.interrupted else (
            "failed" if self.failed_runs or self.build_failure or self.store_error else "done")
        self._record([events.make(events.SESSION_ENDED, status=status)])
        return status

    def _loop(self, keep_open: bool) -> None:
        self._accepting = True
        try:
            self._pump(0)  # commands given before run(), e.g. close(): apply them before starting
            while True:
                self._schedule()
                self._pass_turn()
                self._escalate()
                if not self._live and (self._closing or not (keep_open or self._queue)):
                    return
                self._pump(TICK)
        finally:
            self._accepting = False

    def _wind_down(self) -> None:
        """Stop every run and wait for the children; a second Ctrl-C kills them at once."""
        try:
            self._stop_everything()
            while self._live:
                self._escalate()
                self._pump(TICK)
        except KeyboardInterrupt:
            pass
        finally:
            for r in self._live.values():
                r.child.signal(signal.SIGKILL)
            while self._live:
                self._pump(TICK)

    def _schedule(self) -> None:
        if self.store_error:  # nothing new starts once nothing can be recorded
            for run in list(self._queue):
                self._stop_run(self._runs[run])
            return
        rounds = [self._runs[run].replicate for run in [*self._queue, *self._live]]
        first_round = min((k for k in rounds if k is not None), default=None)
        ready = [run for run in self._queue if self._runs[run].after not in self._live
                 and self._runs[run].replicate in (None, first_round)]
        if not ready:
            return
        if self.plan.schedule == "interleave":
            threads = None  # all start (build) now, but only the run holding the turn steps
        elif self.plan.schedule == "parallel":
            # Split the cores among the runs live from now on; running ones keep their count.
            threads = max(1, (os.cpu_count() or 1) // (len(self._live) + len(ready)))
        elif self._live:
            return  # sequential: one at a time (a paused run keeps the slot)
        else:
            ready, threads = ready[:1], None
        for run in ready:
            self._queue.remove(run)
            self._start(self._runs[run], threads)

    def _start(self, r: Run, threads: int | None) -> None:
        runner_args = [*self.plan.runner_args, "--profile-dir", str(self.store.path / PROFILES)]
        if self.plan.schedule == "interleave":
            runner_args += ["--turns", str(self.plan.turn_steps)]
        r.child = Child.spawn(r.id, r.variant, recipe=self.plan.recipe,
                              runner_args=runner_args, threads=threads,
                              cache=self.plan.cache_dir or self._fresh_cache(r.id),
                              log_path=self.store.log_path(r.id), deliver=self._deliver,
                              torch_trace=self.store.path / "torch-trace" / r.id
                              if self.plan.torch_trace else None)
        self._live[r.id] = r
        self._set_state(r.id, RUNNING)

    def _deliver(self, run: str, batch: list[dict] | None) -> None:
        """Called by a child's reader thread."""
        self._inbox.put((_EVENTS, run, batch) if batch is not None else (_EOF, run))

    def _pump(self, timeout: float) -> None:
        """Apply what arrived: events into the store and the sink, commands, exits."""
        self._sync()
        try:
            item = self._inbox.get(timeout=timeout)
        except queue.Empty:
            return
        while True:
            if item[0] == _EVENTS:
                self._events(item[1], item[2])
            elif item[0] == _EOF:
                self._reap(item[1])
            else:
                self._apply(*item[1:])
            try:
                item = self._inbox.get_nowait()
            except queue.Empty:
                return

    def _events(self, run: str | None, batch: list[dict]) -> None:
        if run is None:  # the sampler's
            self._record(batch)
            return
        for e in batch:
            e["run"] = run  # the supervisor, not the child, decides who said it
        self._record(batch)
        for e in batch:
            self._note(self._runs[run], e)

    def _note(self, r: Run, e: dict) -> None:
        kind = e["type"]
        if kind == events.STEP:
            r.last_step, r.hung_said = time.monotonic(), False
        elif kind == events.RUN_STARTED:
            # The clock starts now, not at the first step: steps are sent 4 times a second, so a
            # run that hangs right after fast steps may never have sent one.
            r.stepping, r.last_step = True, time.monotonic()
        elif kind == events.PHASE:
            if r.compiling or e.get("phase") == "compiling":
                r.compiling = e.get("phase") == "compiling"
                r.last_step = time.monotonic()
            if e.get("phase") == "paused" and e.get("turn"):
                r.waiting_turn = True  # its turn is over (or it is ready for its first)
                if self._turn == r.id:
                    self._turn = None
            elif e.get("phase") == "paused":
                self._set_state(r.id, PAUSED)
            elif self._state(r.id) == PAUSED:
                self._set_state(r.id, RUNNING)
                r.last_step = time.monotonic()  # a paused time is no silence
        elif kind == events.FINISHED:
            r.ended = True
            self._set_state(r.id, STOPPED if e.get("reason") == "stopped" else DONE)
        elif kind == events.FAILED:
            r.ended = True
            self._set_state(r.id, FAILED)
            self.failed_runs.append(r.id)
            if e.get("stage") == "build" and self.build_failure is None:
                self.build_failure = e
                self._stop_everything()  # same recipe, same fault: stop the others

    def _pass_turn(self) -> None:
        """Interleaved schedule: when no run holds the turn, give it to the next waiting one,
        round-robin in the order the runs were started, so drift hits every variant alike."""
        if self.plan.schedule != "interleave":
            return
        if self._turn is not None and (self._turn not in self._live or self._runs[self._turn].ended):
            self._turn = None
        if self._turn is not None:
            return
        waiting = [run for run in self._live if self._runs[run].waiting_turn
                   and not self._runs[run].ended and self._state(run) != PAUSED]
        if not waiting:
            return
        order = list(self._live)
        last = order.index(self._last_turn) if self._last_turn in order else -1
        nxt = min(waiting, key=lambda run: (order.index(run) - last - 1) % len(order))
        r = self._runs[nxt]
        if r.child.send("resume"):
            r.waiting_turn, r.last_step = False, time.monotonic()
            self._turn = self._last_turn = nxt

    def _reap(self, run: str) -> None:
        r = self._live.pop(run)
        rc = r.child.reap()
        if self.plan.cache_dir is None:  # a cold-compile cache is of no use afterwards
            shutil.rmtree(self._fresh_cache(run), ignore_errors=True)
        seconds = round(time.monotonic() - r.child.started, 3)
        batch = []
        if not r.ended:
            how = f"killed by {signal.Signals(-rc).name}" if rc < 0 else f"exited with code {rc}"
            if r.stop_asked:  # asked to stop and killed (still building, or deaf): still a stop
                batch.append(events.make(events.FINISHED, run, reason="stopped", forced=how))
                self._set_state(run, STOPPED)
            else:
                tail = log_tail(self.store.log_path(run))
                batch.append(events.make(events.FAILED, run, stage="crash", error="ChildExited",
                                         message=f"runner {how} without a result", returncode=rc,
                                         traceback=tail, **failures.of_exit(rc, tail)))
                self.failed_runs.append(run)
                self._set_state(run, FAILED)
        batch.append(events.make(events.RUN_EXITED, run, returncode=rc, seconds=seconds))
        self._record(batch)

    # ---- commands, on the loop thread ----------------------------------------------------
    def _apply(self, action: str, run: str | None, *extra) -> None:
        if not self._accepting:  # the session is over: forget runs that were never queued
            if action in ("add", "restart"):
                with self._lock:
                    self._states.pop(run if action == "add" else extra[0], None)
            return
        r = self._runs.get(run) if run is not None else None
        if action == "add":
            variant, replaces = extra
            self._control(run, action, mode=variant.mode, precision=variant.precision,
                          **({"replaces": replaces} if replaces else {}))
            self._enqueue(run, variant, replaces)
        elif action == "restart":
            new, variant = extra
            self._control(run, action, new_run=new, mode=variant.mode, precision=variant.precision)
            if r is not None:
                self._stop_run(r)
            self._enqueue(new, variant, replaces=run, after=run, first=True)
        elif action == "stop" and r is not None and self._stoppable(r):
            self._control(run, action)
            self._stop_run(r)
        elif action == "pause" and r is not None and self._controllable(r) and not r.pause_asked:
            self._control(run, action)
            r.pause_asked = r.child.send("pause")
        elif action == "resume" and r is not None and self._controllable(r) and r.pause_asked:
            self._control(run, action)
            r.pause_asked = not r.child.send("resume")
        elif action == "dump" and r is not None and r.child is not None and not r.ended:
            self._control(run, action, log=str(self.store.log_path(run)))
            r.child.signal(signal.SIGUSR1)
        elif action == "profile" and r is not None and self._controllable(r):
            options = extra[0]
            self._control(run, action, **({"options": options} if options else {}))
            r.child.send("profile" + (f" {json.dumps(options)}" if options else ""))
        elif action in ("stop_all", "close"):
            self._control(None, action)
            self._stop_everything()
            self._closing = self._closing or action == "close"

    def _stoppable(self, r: Run) -> bool:
        return r.id in self._queue or self._controllable(r)

    def _controllable(self, r: Run) -> bool:
        return r.id in self._live and not (r.ended or r.stop_asked)

    def _stop_run(self, r: Run) -> None:
        if r.id in self._queue:
            self._queue.remove(r.id)
            self._set_state(r.id, STOPPED)
            self._record([events.make(events.FINISHED, r.id, reason="stopped")])  # never started
            return
        if not self._controllable(r):
            return
        r.stop_asked = True
        if r.stepping:
            r.child.send("stop")
            r.deadline = time.monotonic() + self.plan.stop_line_s
        else:  # still building: nothing to save, and a SIGINT there is not safe (see the top)
            r.escalation = 1
            self._escalate_run(r)

    def _stop_everything(self) -> None:
        for run in list(self._queue):  # first, so nothing starts in their place
            self._stop_run(self._runs[run])
        for r in list(self._live.values()):
            self._stop_run(r)

    def _escalate(self) -> None:
        now = time.monotonic()
        for r in list(self._live.values()):
            if r.deadline is not None and now >= r.deadline:
                self._escalate_run(r)
            self._watch_hang(r, now)

    def _watch_hang(self, r: Run, now: float) -> None:
        """Say once when a started run sends no step for ``hang_s`` (compiling, paused or waiting
        for its turn does not count): it may be stuck; `dump` shows where."""
        if (self.plan.hang_s is None or r.last_step is None or r.hung_said or r.ended or r.compiling
                or self._state(r.id) == PAUSED or r.waiting_turn):
            return
        if now - r.last_step >= self.plan.hang_s:
            r.hung_said = True
            self._record([events.make(events.WARNING, r.id, hung=True,
                                      text=f"no step for {now - r.last_step:.0f} s: hung? "
                                      "(d dumps its Python stacks into its log)")])

    def _escalate_run(self, r: Run) -> None:
        if r.escalation == 0:
            r.child.signal(signal.SIGINT)
            r.escalation, r.deadline = 1, time.monotonic() + self.plan.stop_grace_s
        else:
            r.child.signal(signal.SIGKILL)
            r.escalation, r.deadline = 2, None

    # ---- helpers -------------------------------------------------------------------------
    def _allocate(self, variant: Variant) -> str:
        """A run id unique in the session: the variant's, then -2, -3, ..."""
        with self._lock:
            if self._closed:
                raise RuntimeError("the session is closed")
            run, n = variant.run_id, 1
            while run in self._states:
                n += 1
                run = f"{variant.run_id}-{n}"
            self._states[run] = QUEUED
            self._variants[run] = variant
            return run

    def _variant_of(self, run: str) -> Variant:
        with self._lock:
            if run not in self._variants:
                raise KeyError(f"no run {run!r} in this session")
            return self._variants[run]

    def _command(self, action: str, run: str) -> None:
        self._variant_of(run)  # an unknown id is the caller's bug: say so in its thread
        self._inbox.put((_COMMAND, action, run))

    def _enqueue(self, run: str, variant: Variant, replaces: str | None = None,
                 after: str | None = None, first: bool = False, replicate: int | None = None) -> None:
        self._runs[run] = Run(run, variant, replaces, after, replicate=replicate)
        self._queue.insert(0 if first else len(self._queue), run)
        fields = {"replaces": replaces} if replaces else {}
        if replicate is not None:
            fields.update(replicate=replicate, repeats=self.plan.repeats)
        self._record([events.make(events.RUN_QUEUED, run, mode=variant.mode,
                                  precision=variant.precision, **fields)])

    def _control(self, run: str | None, action: str, **fields) -> None:
        self._record([events.make(events.CONTROL, run, action=action, **fields)])

    def _state(self, run: str) -> str | None:
        with self._lock:
            return self._states.get(run)

    def _set_state(self, run: str, state: str) -> None:
        with self._lock:
            self._states[run] = state

    def _fresh_cache(self, run: str) -> Path:
        return self.store.path / "inductor-cache" / run

    def _record(self, batch: list[dict]) -> None:
        try:
            self.store.append(batch)
        except StoreWriteError as exc:
            self._store_failed(str(exc))
        self.sink(batch)
        self._sync()

    def _sync(self) -> None:
        """The store's fsync / deleted-directory check (itself at most once a second)."""
        try:
            notice = self.store.tick()
        except StoreWriteError as exc:
            self._store_failed(str(exc))
            return
        if notice:
            self._record([events.make(events.WARNING, text=notice, store=True)])

    def _store_failed(self, message: str) -> None:
        """The store cannot be written: stop every run the normal way, start nothing more."""
        if self.store_error is not None:
            return
        self.store_error = message
        with self._lock:
            self._closed = True  # add() and restart() are refused from now on
        self._closing = True
        self._record([events.make(events.WARNING, text=f"{message}: stopping the runs",
                                  store_error=message)])
        self._stop_everything()
