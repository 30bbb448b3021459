"""Runs a session: queues runner children, starts them per the schedule, applies control
commands, writes the store and hands every event to a sink.

One job an object, each with its own state, owned by the supervisor: the ``RunTable`` (runs.py:
run records, the queue, the live runs, states), the ``Schedule`` (schedule.py: who starts, who
holds the turn), the ``Handover`` (handover.py: no turn or start beside another run's build,
end or exit), the ``Stopper`` (stopping.py: stop lines, signals, the hang watch, the budget),
``Jobs`` (job_runs.py: torchrun jobs and their ranks), ``Commands`` (commands.py: the control
methods and how the loop applies them) and the ``Recorder`` (recorder.py: the store and the
sink). This one is the loop: children started with their settings, events, exits. What the
recorded events say of each run is the one reducer's (sessiondir/run_state.py, a run's
``state``): the loop keeps only its processes and its clocks beside it.

Threads. ``run()`` is the loop thread: the only one that writes the store, calls the sink,
or starts, signals and reaps children. Each child's reader thread (control/child.py) and the
probe sampler only put into the inbox. The control methods (``add``, ``stop``, ``pause``,
``resume``, ``profile``, ``restart``, ``stop_all``, ``close``) may be called from any thread,
e.g. the TUI's: they put a command into the same inbox and return at once; the loop applies it
within a tick (0.1 s) and records a ``control`` event. A command that no longer applies when it
arrives (pause a finished run, stop a stopped one) is dropped without an event. ``states()`` is a
thread-safe snapshot. The sink is called on the loop thread: a UI must hand batches over to
its own thread rather than draw from there.

Run states: queued -> running (building, compiling, stepping) <-> paused, then done, stopped
or failed. "paused" is set when the runner says it paused (at its next step boundary), not
when asked. In the sequential schedule a paused run keeps the slot: the next run does not
start, since the paused one may resume and would then share the machine with it.

When the store cannot be written (disk full, file too large, an I/O error; store.py), the
supervisor says so once in ``store_error``, refuses new runs and stops every run the normal way.
Events that could not be written stay in ``store.unwritten`` (the summary still uses them) and
are retried with each later write. ``store.tick()`` runs at least once per loop tick.
"""

from __future__ import annotations

import queue
import time
from dataclasses import replace

from tuimon import events, failures
from tuimon.control import exits, forkserver
from tuimon.control.child import Child
from tuimon.control.commands import EOF, EVENTS, Commands
from tuimon.control.files import Apart
from tuimon.control.handover import Handover
from tuimon.control.job_child import JobChild
from tuimon.control.job_runs import RANK, Jobs
from tuimon.control.printed import printed_numbers
from tuimon.control.recorder import Recorder, Sink
from tuimon.control.runs import (
    DONE,
    FAILED,
    PAUSED,
    PROFILES,
    RUNNING,
    STOPPED,
    Plan,
    Run,
    RunTable,
    check_profile_options,
)
from tuimon.control.sampler import Sampler
from tuimon.control.schedule import Schedule
from tuimon.control.stopping import TICK, Stopper, interrupt
from tuimon.control.until_known import UntilKnown
from tuimon.control.warm import initial_rounds, warm_starts
from tuimon.sessiondir.run_state import SessionState
from tuimon.sessiondir.store import SessionStore
from tuimon.settings import Turns
from tuimon.variants import Variant

# Callers (the CLI, the daemon, tests) import these from here.
__all__ = ["DONE", "FAILED", "STOPPED", "Plan", "Supervisor", "check_profile_options", "interrupt"]


class Supervisor:
    def __init__(self, store: SessionStore, plan: Plan, sink: Sink | None = None,
                 gpu_probe=None) -> None:
        self.store = store
        self.plan = plan
        self.sink = sink or (lambda batch: None)  # a LiveSource sets its own after this
        self.build_failure: dict | None = None  # the first build-stage failure, if any
        self.failed_runs: list[str] = []
        self.interrupted = False
        self._inbox: queue.Queue = queue.Queue()
        self._table = RunTable()
        self._state = SessionState()  # what the recorded events say of each run
        self._recorder = Recorder(store, lambda batch: self.sink(batch), self._store_failed, self._fold)
        record = self._record = self._recorder.record
        self._stopper = Stopper(plan, self._table, record)
        self._handover = Handover(plan, self._table, record, self._stopper.stop)
        # A sample period starts with a turn.
        self._schedule = Schedule(plan, self._table, self._handover, lambda: self._sampler and
                                  self._sampler.poke())
        self._commands = Commands(self._table, self._inbox, record, self._stopper, self._enqueue,
                                  store.log_path)
        self._closing = False  # close (or a store failure): run() ends once nothing is live
        self._accepting = False  # commands are applied only while the loop runs
        self._files = Apart(store.path, plan.program, record)  # a script run's files: its own
        # Round-major: with --repeats every variant runs once per round, so the rounds' processes
        # meet the same machine state and the combined interval sees process-to-process spread.
        self._initial = [(self._table.allocate(v), v, k) for v, k in initial_rounds(plan)]
        self._jobs = Jobs(plan, self._table, record, self._schedule, self._stopper,
                          failed=self._failed, news=lambda *news: self._inbox.put((RANK, *news)),
                          log_path=store.log_path, first=[run for run, _, _ in self._initial])
        self._warm = warm_starts(store.path, plan)  # what each compiled run starts from (warm.py)
        self._forks: forkserver.ForkServer | None = None  # recipe runners forked: run() starts it
        self._known = UntilKnown(plan, self._table, record, self._stopper, self._queue_round,
                                 self._may_go_on) if plan.answer.get("until_known") else None
        if self._known is not None:  # its budget counts stepping (until_known.py)
            self._stopper.budget_clock = self._known.clock
        self._sampler = Sampler(plan.interval, self.live_pids, lambda batch: self._inbox.put(
            (EVENTS, None, batch)), gpu=gpu_probe, stepping=self._schedule.stepping,
            ranks=self.rank_pids) if plan.interval else None

    # ---- the control API, from any thread (control/commands.py) --------------------------------
    def add(self, variant: Variant, replaces: str | None = None) -> str:
        """Queue a new run of ``variant``; returns its run id. ``replaces`` is recorded in its
        ``run_queued`` event (a viewer shows it in that run's place); it stops nothing."""
        return self._commands.add(variant, replaces)

    def restart(self, run: str, variant: Variant | None = None) -> str:
        """Stop ``run`` gracefully (if it is queued or live) and queue a new run of ``variant``
        (default: the same) that replaces it; returns the new run id. The new run goes to the
        front of the queue and starts once the old process has exited."""
        return self._commands.restart(run, variant)

    def stop(self, run: str) -> None:
        """Stop a run at its next step boundary (a queued one never starts)."""
        self._commands.on_run("stop", run)

    def pause(self, run: str) -> None:
        """Pause a live run at its next step boundary (a run still building: at its first)."""
        self._commands.on_run("pause", run)

    def resume(self, run: str) -> None:
        self._commands.on_run("resume", run)

    def dump(self, run: str) -> None:
        """Write the Python stacks of every thread of a live runner into its log (SIGUSR1 to
        its faulthandler): what a hung run is doing, without stopping it."""
        self._commands.on_run("dump", run)

    def profile(self, run: str, **options) -> None:
        """Capture a torch.profiler window of a live run from its next step boundary.

        Options (each optional; the run's defaults from --profile-window / --profile-backward
        otherwise): wait, warmup, active (steps), backward (False, True: eager variants, or
        "all"). The runner reports with ``profile`` events (started, then done or failed)."""
        self._commands.profile(run, options)

    def stop_all(self) -> None:
        """Stop every live run and drop the queue; a kept-open session goes on (add works)."""
        self._commands.on_all("stop_all")

    def close(self) -> None:
        """Stop everything and end ``run()`` once every child has exited; add() is refused."""
        self._commands.on_all("close")

    def states(self) -> dict[str, str]:
        """Run id -> queued | running | paused | done | failed | stopped, in the order added (the
        last three follow the runner's own finished / failed event, before its exit)."""
        return self._table.states()

    def live_pids(self) -> dict[str, int]:
        """Run id -> runner pid of the children alive now (read by the sampler thread)."""
        return {run: r.child.proc.pid for run, r in list(self._table.live.items())}

    def rank_pids(self) -> dict[str, dict[int, int]]:
        """Run -> {rank: pid} of the live jobs' ranks (read by the sampler's thread)."""
        return self._jobs.rank_pids()

    @property
    def store_error(self) -> str | None:
        """The first failed write of the store: the runs were stopped."""
        return self._recorder.error

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
        self._forks = forkserver.for_plan(plan, self.store.log_path("forkserver"), self._jobs.on)
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
            self._table.close()
            if self._sampler:
                self._sampler.stop()
            self._jobs.close()
            if self._forks:
                self._forks.close()
        self._pump(0)  # the last samples
        self._record(self._files.end())
        status = "interrupted" if self.interrupted else (
            "failed" if self.failed_runs or self.build_failure or self.store_error else "done")
        self._record([events.make(events.SESSION_ENDED, status=status)])
        return status

    def _loop(self, keep_open: bool) -> None:
        self._accepting = True
        live = self._table.live
        try:
            self._pump(0)  # commands given before run(), e.g. close(): apply them before starting
            while True:
                self._start_ready()
                self._schedule.pass_turn()
                if self._jobs.on:
                    self._jobs.tick(time.monotonic())
                if self._known is not None:  # --until-known: a round ends once the answer has it
                    self._known.tick()
                self._stopper.escalate()
                if not live and (self._closing or not (keep_open or self._table.queue)):
                    return
                self._pump(TICK)
        finally:
            self._accepting = False

    def _wind_down(self) -> None:
        """Stop every run and wait for the children; a second Ctrl-C kills them at once."""
        try:
            self._stopper.stop_everything()
            while self._table.live:
                self._stopper.escalate()
                self._pump(TICK)
        except KeyboardInterrupt:
            pass
        finally:
            self._stopper.kill_all()
            while self._table.live:
                self._pump(TICK)

    def _start_ready(self) -> None:
        table = self._table
        if self.store_error:  # nothing new starts once nothing can be recorded
            for run in list(table.queue):
                self._stopper.stop(table.runs[run])
            return
        if table.queue and self._forks:  # started with the first run due; later runs fork
            self._forks.begin()
        ready, threads = self._schedule.startable()  # not beside a run's steps or end (handover)
        for run in ready:
            table.queue.remove(run)
            self._start(table.runs[run], threads)

    def _start(self, r: Run, threads: int | None) -> None:
        """A run's own settings, derived from the plan's (tuimon/settings.py), and its child."""
        plan, v = self.plan, r.variant
        files, cwd = self._files.spawn(r.id)  # cwd: a script run's own directory (files.py)
        base = plan.settings
        settings = replace(
            base, run=r.id, mode=v.mode, precision=v.precision, axes=v.axes, fixes=v.fixes,
            threads=threads,
            length=replace(base.length, round=r.replicate),  # round 1 runs it all (lengths.py)
            turns=(Turns(turn_steps=plan.turn_steps or 0, turn_s=plan.turn_s)
                   if self._schedule.interleave else Turns()),
            profile=replace(base.profile, profile_dir=str((self.store.path / PROFILES).absolute())),
            hooks=replace(base.hooks, files=files))
        trace = self.store.path / "torch-trace" / r.id if plan.torch_trace else None
        cache, env, said = self._warm.prepare(r.id, v)  # seeded from artifacts when warm
        if said:
            self._record(said)
        spawn = {"cache": cache, "log_path": self.store.log_path(r.id), "deliver": self._deliver,
                 "torch_trace": trace, "env_extra": {**plan.env, **env}, "cwd": cwd}
        r.child = (self._jobs.spawn(r, settings, **spawn) if self._jobs.on
                   else Child.spawn(settings, forks=self._forks, **spawn))
        self._table.live[r.id] = r
        self._table.set_state(r.id, RUNNING)

    def _deliver(self, run: str, batch: list[dict] | None) -> None:
        """Called by a child's reader thread."""
        self._inbox.put((EVENTS, run, batch) if batch is not None else (EOF, run))

    def _pump(self, timeout: float) -> None:
        """Apply what arrived: events into the store and the sink, commands, exits."""
        self._recorder.sync()
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
                self._jobs.news(*item[1:])
            elif not self._accepting:  # the session is over
                self._commands.drop(*item[1:])
            elif self._commands.apply(*item[1:]):
                self._closing = True
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
        if self.plan.program.is_script:
            batch = exits.hold_script_end(self._table.runs[run], batch)
        self._record(batch)

    def _fold(self, e: dict) -> None:
        """Each recorded event, into the runs' state (the loop thread), then what it changes
        here: the hang watch's clocks, the run's state in the table, failures."""
        r = self._table.runs.get(e.get("run"))
        compiling = r is not None and r.state.compiling
        self._state.add(e)
        if self._known is not None:
            self._known.fold(e)
        if r is None:
            return
        kind, now = e["type"], time.monotonic()
        if r.state.compiling != compiling:  # a compile began or ended: the clocks start again
            r.last_step = r.stepping_since = now
            if not compiling and isinstance(r.child, JobChild) and r.child.turn_clock is not None:
                r.child.turn_clock = now  # a compile is not a turn
        if kind == events.STEP:
            r.last_step, r.hung_said = now, False
        elif kind == events.RUN_STARTED and sum(bool(rs.started) for rs in r.state.ranks.values()) < 2:
            # The clock starts now (a job: at its first rank's start), not at the first step:
            # steps are sent 4 times a second, so a run that hangs right after fast steps may
            # never have sent one.
            r.last_step = r.stepping_since = now
        if e.get("rank") is not None:
            self._jobs.note(r, e)
        else:
            self._note(r, e)

    def _note(self, r: Run, e: dict) -> None:
        kind, table = e["type"], self._table
        if kind == events.PHASE:
            if e.get("phase") == "paused" and e.get("turn"):
                r.waiting_turn = True  # its turn is over (or it is ready for its first)
                self._schedule.over(r.id)
            elif e.get("phase") == "paused":
                table.set_state(r.id, PAUSED)
            elif table.state(r.id) == PAUSED:
                table.set_state(r.id, RUNNING)
                r.last_step = r.stepping_since = time.monotonic()  # a paused time is no silence
        elif kind == events.WARNING and e.get("children"):
            self._handover.children(r, e)  # its training runs in child processes
        elif kind == events.FINISHED:
            table.set_state(r.id, STOPPED if e.get("reason") == "stopped" else DONE)
        elif kind == events.FAILED:
            if self.plan.answer.get("sweep") and failures.build_oom(e):
                table.set_state(r.id, FAILED)  # tuimon sweep: too big for this machine, skipped
                return
            self._failed(r, e)

    def _failed(self, r: Run, e: dict) -> None:
        """``r`` failed with ``e``; a build failure stops the others (same recipe or command,
        same fault)."""
        if r.id not in self.failed_runs:
            self.failed_runs.append(r.id)
        self._table.set_state(r.id, FAILED)
        if e.get("stage") == "build" and self.build_failure is None:
            self.build_failure = e
            self._stopper.stop_everything()

    def _reap(self, run: str) -> None:
        r = self._table.live.pop(run)
        rc = r.child.reap()
        self._handover.exited(r)
        seconds = round(time.monotonic() - r.child.started, 3)
        kept = self._warm.finish(run, r.state.stepped)  # a variant's first run keeps its cache
        if isinstance(r.child, JobChild):
            batch = self._jobs.end(r, rc) if not r.state.ended else []
        else:  # what its exit says that its events did not (control/exits.py)
            told, state, failure = exits.told(r, rc, self.plan.program.is_script,
                                              self.store.log_path(run))
            batch = ([kept] if kept else []) + told
            if state is not None:
                self._table.set_state(run, state)
            if failure is not None:
                self._failed(r, failure)  # a script's build failure stops the others
        if self.plan.program.is_script and (said := printed_numbers(self.store.log_path(run))):
            batch.append(events.make(events.PRINTED, run, **said))  # its own numbers (printed.py)
        batch.append(events.make(events.RUN_EXITED, run, returncode=rc, seconds=seconds))
        self._record(batch + self._files.exited(run))
        if self._known is not None:  # its round's end: a look, then the next round or the end
            self._known.exited(run)

    # ---- helpers -------------------------------------------------------------------------
    def _enqueue(self, run: str, variant: Variant, replaces: str | None = None,
                 after: str | None = None, first: bool = False, replicate: int | None = None) -> None:
        fields = {"replaces": replaces} if replaces else {}
        if replicate is not None:
            if self._known is not None:  # --until-known: rounds until the answer is known, none planned
                repeats = None
            elif self.plan.repeats > 1:
                repeats = self.plan.repeats
            else:  # --warm: a second, warm process of a compiled variant
                repeats = 1 + (variant.compiled and bool(self.plan.warm.get("extra")))
            fields.update(replicate=replicate, repeats=repeats)
        fields.update(self._warm.plan(run, variant, replicate))
        self._record([events.make(events.RUN_QUEUED, run, **variant.fields(), **fields)])
        # Its record, beside what its run_queued began to say of it (the state).
        self._table.runs[run] = Run(run, variant, replaces, after, replicate=replicate,
                                    state=self._state.runs[run])
        self._table.queue.insert(0 if first else len(self._table.queue), run)

    def _queue_round(self, k: int) -> None:
        """--until-known: round ``k`` of every variant of the plan (until_known.py asks)."""
        for v in self.plan.variants:
            self._enqueue(self._table.allocate(v), v, replicate=k)

    def _may_go_on(self) -> bool:
        return not (self._closing or self.interrupted or self.store_error or self.build_failure)

    def _store_failed(self, message: str) -> None:
        """The store cannot be written: stop every run the normal way, start nothing more."""
        self._table.close()  # add() and restart() are refused from now on
        self._closing = True
        self._record([events.make(events.WARNING, text=f"{message}: stopping the runs",
                                  store_error=message)])
        self._stopper.stop_everything()
