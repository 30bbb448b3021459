"""Runs a session: queues runner children, starts them per the schedule, applies control
commands, writes the store and hands every event to a sink.

One job a module: ``runs`` (the plan, run records, states), ``schedule`` (who starts and who
steps next), ``handover`` (when: no turn or start beside another run's build, end or exit),
``commands`` (the control methods and how the loop applies them), ``stopping`` (stop lines,
signals, the hang watch) and this one (the loop: children, events, the store).

Threads. ``run()`` is the loop thread: the only one that writes the store, calls the sink,
or starts, signals and reaps children. Each child's reader thread (control/child.py) and the
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

Stopping a run (control/stopping.py): a stop line, then SIGINT, then SIGKILL, each after its
deadline; a runner still building gets SIGKILL at once.

When the store cannot be written (disk full, file too large, an I/O error; store.py), the
supervisor says so once in ``store_error``, refuses new runs and stops every run the normal way:
there is no point measuring what cannot be kept. Events that could not be written stay in
``store.unwritten`` (the end of session summary still uses them) and are retried with each later
write, in case room came back. ``store.tick()`` runs at least once per loop tick: the fsync at
most once a second, and recreating a session directory deleted under the session.
"""

from __future__ import annotations

import queue
import signal
import threading
import time
from collections.abc import Callable

from tuimon import events, failures
from tuimon.control.child import Child, log_tail
from tuimon.control.commands import EOF, EVENTS, Commands
from tuimon.control.files import Apart
from tuimon.control.handover import Handover
from tuimon.control.job_child import JobChild
from tuimon.control.job_runs import RANK, JobRuns
from tuimon.control.runs import (
    DONE,
    FAILED,
    PAUSED,
    PROFILES,
    RUNNING,
    STOPPED,
    Plan,
    Run,
    check_profile_options,
)
from tuimon.control.sampler import Sampler
from tuimon.control.schedule import startable
from tuimon.control.stopping import TICK, Stopping
from tuimon.control.warm import initial_rounds, warm_starts
from tuimon.sessiondir.store import SessionStore, StoreWriteError
from tuimon.variants import Variant

# Callers (the CLI, the daemon, tests) import these from here.
__all__ = ["DONE", "FAILED", "STOPPED", "Plan", "Supervisor", "check_profile_options", "interrupt"]

Sink = Callable[[list[dict]], None]


def interrupt(signum, frame) -> None:
    """A SIGTERM handler for the process running ``Supervisor.run``: the loop then stops the
    runs as on Ctrl-C (by default SIGTERM would end it at once and orphan them)."""
    raise KeyboardInterrupt


class Supervisor(Commands, Stopping, JobRuns, Handover):
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
        self._exiting: dict[str, float] = {}  # reaped runs whose group still runs: since (handover)
        self._closing = False
        self._accepting = False  # commands are applied only while the loop runs
        self._rank_hub, self._jobs_tick = None, None  # torchrun jobs' rank socket (jobs.py)
        self._files = Apart(store.path, plan.script, self._record)  # a script run's files: its own
        # Round-major: with --repeats every variant runs once per round, so the rounds' processes
        # meet the same machine state and the combined interval sees process-to-process spread.
        self._initial = [(self._allocate(v), v, k) for v, k in initial_rounds(plan)]
        self._warm = warm_starts(store.path, plan)  # what each compiled run starts from (warm.py)
        self._sampler = Sampler(plan.interval, self.live_pids, lambda batch: self._inbox.put(
            (EVENTS, None, batch)), gpu=gpu_probe, stepping=self._stepping,
            ranks=self.rank_pids) if plan.interval else None
    # ---- the loop ------------------------------------------------------------------------
    def run(self, keep_open: bool = False) -> str:
        """Run the plan's variants per the schedule, and whatever is added meanwhile.

        keep_open=False (headless): returns once nothing is running or queued.
        keep_open=True (a TUI): keeps sampling and taking commands until ``close()``.
        Returns 'done', 'failed' (a run failed) or 'interrupted' (Ctrl-C).
        """
        plan = self.plan  # what every reader of the session should know of how it was run
        self._record([events.make(events.SESSION_STARTED, schedule=plan.schedule,
                                  turn_steps=plan.turn_steps, turn_s=plan.turn_s,
                                  interval=plan.interval, repeats=plan.repeats,
                                  quiet_only=plan.quiet_only, pin_malloc=bool(plan.env), **plan.answer)])
        if plan.warm.get("source"):  # --cache-from: what the runs start from, and what it was
            self._record([events.make(events.CACHE_SOURCE, **plan.warm["source"])])
        self._files.start()
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
            if self._rank_hub is not None:
                self._rank_hub.close()
        self._pump(0)  # the last samples
        self._record(self._files.end())
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
                if self._rank_hub is not None:
                    self._tick_jobs(time.monotonic())
                self._escalate()
                if not self._live and (self._closing or not (keep_open or self._queue)):
                    return
                self._pump(TICK)
        finally:
            self._accepting = False
    def _schedule(self) -> None:
        if self.store_error:  # nothing new starts once nothing can be recorded
            for run in list(self._queue):
                self._stop_run(self._runs[run])
            return
        ready, threads = startable(self.plan.schedule, self._queue, self._live, self._runs)
        if ready and not self._may_start():  # not beside a run's steps or its end (handover.py)
            return
        for run in ready:
            self._queue.remove(run)
            self._start(self._runs[run], threads)

    def _start(self, r: Run, threads: int | None) -> None:
        runner_args = [*self.plan.runner_args, "--profile-dir", str(self.store.path / PROFILES)]
        if r.replicate is not None:  # its round: round 1 runs the whole length (tuimon/lengths.py)
            runner_args += ["--round", str(r.replicate)]
        interleave = self.plan.schedule == "interleave"
        if interleave:
            runner_args += (["--turns", str(self.plan.turn_steps)] if self.plan.turn_steps
                            else ["--turn-seconds", str(self.plan.turn_s)])
        script, cwd = None, None  # cwd: a script run's own directory (control/files.py)
        if self.plan.script is not None:
            script = {**self.plan.script, "profile_dir": str((self.store.path / PROFILES).absolute()),
                      "turns": (self.plan.turn_steps or 0) if interleave else 0,
                      "turn_s": self.plan.turn_s if interleave else 0.0, "round": r.replicate}
            script, cwd = self._files.spawn(r.id, script)
        trace = self.store.path / "torch-trace" / r.id if self.plan.torch_trace else None
        cache, env, said = self._warm.prepare(r.id, r.variant)  # seeded from artifacts when warm
        if said:
            self._record(said)
        spawn = {"recipe": self.plan.recipe, "cache": cache, "log_path": self.store.log_path(r.id),
                 "deliver": self._deliver, "torch_trace": trace, "env_extra": {**self.plan.env, **env},
                 "cwd": cwd}
        if self._is_job():
            r.child = self._spawn_job(r, threads, runner_args, script, **spawn)
        else:
            r.child = Child.spawn(r.id, r.variant, script=script, runner_args=runner_args,
                                  threads=threads, **spawn)
        self._live[r.id] = r
        self._set_state(r.id, RUNNING)

    def _deliver(self, run: str, batch: list[dict] | None) -> None:
        """Called by a child's reader thread."""
        self._inbox.put((EVENTS, run, batch) if batch is not None else (EOF, run))

    def _pump(self, timeout: float) -> None:
        """Apply what arrived: events into the store and the sink, commands, exits."""
        self._sync()
        try:
            item = self._inbox.get(timeout=timeout)
        except queue.Empty:
            return
        while True:
            if item[0] == EVENTS:
                self._events(item[1], item[2])
            elif item[0] == EOF:
                self._reap(item[1])
            elif item[0] == RANK:
                self._rank_news(*item[1:])
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
        if self.plan.script is not None:
            batch = self._hold_script_end(self._runs[run], batch)
        self._record(batch)
        for e in batch:
            self._note(self._runs[run], e)

    def _note(self, r: Run, e: dict) -> None:
        kind = e["type"]
        if kind == events.STEP:
            r.last_step, r.hung_said, r.steps_seen = time.monotonic(), False, True
        elif kind == events.RUN_STARTED:
            # The clock starts now, not at the first step: steps are sent 4 times a second, so a
            # run that hangs right after fast steps may never have sent one.
            r.stepping, r.last_step = True, time.monotonic()
            r.stepping_since = r.last_step
        elif kind == events.PHASE:
            if r.compiling or e.get("phase") == "compiling":
                r.compiling = e.get("phase") == "compiling"
                r.last_step = r.stepping_since = time.monotonic()
            if e.get("phase") == "paused" and e.get("turn"):
                r.waiting_turn = True  # its turn is over (or it is ready for its first)
                if self._turn == r.id:
                    self._turn = None
            elif e.get("phase") == "paused":
                self._set_state(r.id, PAUSED)
            elif self._state(r.id) == PAUSED:
                self._set_state(r.id, RUNNING)
                r.last_step = r.stepping_since = time.monotonic()  # a paused time is no silence
        elif kind == events.WARNING and e.get("children"):
            self._children(r, e)  # its training runs in child processes (handover.py)
        elif kind == events.FINISHED:
            r.ended = True
            self._set_state(r.id, STOPPED if e.get("reason") == "stopped" else DONE)
        elif kind == events.FAILED:
            r.ended = True
            self._set_state(r.id, FAILED)
            if self.plan.answer.get("sweep") and failures.build_oom(e):
                return  # tuimon sweep: a variant too big for this machine is skipped, not a failure
            self.failed_runs.append(r.id)
            if e.get("stage") == "build" and self.build_failure is None:
                self.build_failure = e
                self._stop_everything()  # same recipe, same fault: stop the others
    def _reap(self, run: str) -> None:
        r = self._live.pop(run)
        rc = r.child.reap()
        self._exited(r)
        seconds = round(time.monotonic() - r.child.started, 3)
        kept = self._warm.finish(run, r.steps_seen)  # a variant's first run keeps its cache
        batch = [kept] if kept else []
        if isinstance(r.child, JobChild):
            batch = self._job_end(r, rc) if not r.ended else []
        elif r.script_end is not None and rc == 0:  # it ended by itself, and well
            batch.append(r.script_end)
            r.ended = True
            self._set_state(run, DONE)
        elif not r.ended and self.plan.script is not None and not r.stop_asked:
            batch.append(self._script_exit(r, rc))
        elif r.ended and rc < 0 and rc != -signal.SIGINT and not r.stop_asked and not r.escalation:
            batch.append(events.make(events.WARNING, run, text=(
                f"its process was killed by {failures.of_exit(rc)['signal']} as it exited, after "
                "it had finished: the steps it measured are all here (the log holds its last lines)")))
        elif not r.ended:
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
        self._record(batch + self._files.exited(run))
    def _hold_script_end(self, r: Run, batch: list[dict]) -> list[dict]:
        """A script's hooks say it ended by itself at its exit; whether it ended well, only its
        exit code says: their ``finished`` waits for the reap (``_reap``)."""
        held = [e for e in batch if e["type"] == events.FINISHED and e.get("reason") == events.SCRIPT_ENDED]
        if not held:
            return batch
        r.script_end = held[-1]
        return [e for e in batch if e not in held]

    def _script_exit(self, r: Run, rc: int) -> dict:
        """A script's end that its hooks could not tell: a non-zero exit code, a kill, or an
        error before its first step (a missing module, a bad argument): a build failure then."""
        how = f"was killed by {signal.Signals(-rc).name}" if rc < 0 else f"exited with code {rc}"
        tail = log_tail(self.store.log_path(r.id))
        last = next((x.strip() for x in reversed(tail.splitlines()) if x.strip()), "")
        stage = "step" if r.steps_seen else "build"
        when = "before its first step" if stage == "build" else "while training"
        message = f"the script {how} {when}" + (f": {last}" if last else "")
        self.failed_runs.append(r.id)
        self._set_state(r.id, FAILED)
        e = events.make(events.FAILED, r.id, stage=stage, error="ScriptExit", message=message[:500],
                        returncode=rc, traceback=tail, **failures.of_exit(rc, tail))
        if stage == "build" and self.build_failure is None:
            self.build_failure = e
            self._stop_everything()  # the same command fails the same way in every variant
        return e

    # ---- helpers -------------------------------------------------------------------------
    def _enqueue(self, run: str, variant: Variant, replaces: str | None = None,
                 after: str | None = None, first: bool = False, replicate: int | None = None) -> None:
        self._runs[run] = Run(run, variant, replaces, after, replicate=replicate)
        self._queue.insert(0 if first else len(self._queue), run)
        fields = {"replaces": replaces} if replaces else {}
        if replicate is not None:
            fields.update(replicate=replicate, repeats=self.plan.repeats if self.plan.repeats > 1
                          else 1 + (variant.compiled and bool(self.plan.warm.get("extra"))))
        fields.update(self._warm.plan(run, variant, replicate))
        self._record([events.make(events.RUN_QUEUED, run, **variant.fields(), **fields)])
    def _state(self, run: str) -> str | None:
        with self._lock:
            return self._states.get(run)

    def _set_state(self, run: str, state: str) -> None:
        with self._lock:
            self._states[run] = state

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
