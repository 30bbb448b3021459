"""The supervisor's commands: asked from any thread (the TUI's, the daemon's), put into the
inbox and applied on the loop thread within a tick, each recorded as a ``control`` event. A
mixin of ``Supervisor``; a command that no longer applies when it arrives is dropped."""

from __future__ import annotations

import json
import signal

from tuimon import events
from tuimon.control.runs import QUEUED, check_profile_options
from tuimon.variants import Variant

EVENTS, EOF, COMMAND = "events", "eof", "command"  # kinds of inbox items


class Commands:
    """Uses the supervisor's ``_inbox``, ``_lock``, ``_states``, ``_variants``, ``_closed`` and,
    on the loop thread, its runs, ``_enqueue``, ``_record`` and the stopping mixin."""

    # ---- from any thread -------------------------------------------------------------------
    def add(self, variant: Variant, replaces: str | None = None) -> str:
        """Queue a new run of ``variant``; returns its run id. ``replaces`` is recorded in its
        ``run_queued`` event (a viewer shows it in that run's place); it stops nothing."""
        if replaces is not None:
            self._variant_of(replaces)  # must be a run of this session
        run = self._allocate(variant)
        self._inbox.put((COMMAND, "add", run, variant, replaces))
        return run

    def restart(self, run: str, variant: Variant | None = None) -> str:
        """Stop ``run`` gracefully (if it is queued or live) and queue a new run of ``variant``
        (default: the same) that replaces it; returns the new run id. The new run goes to the
        front of the queue and starts once the old process has exited."""
        new = self._allocate(variant or self._variant_of(run))
        self._inbox.put((COMMAND, "restart", run, new, self._variant_of(new)))
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
        self._inbox.put((COMMAND, "profile", run, dict(options)))

    def stop_all(self) -> None:
        """Stop every live run and drop the queue; a kept-open session goes on (add works)."""
        self._inbox.put((COMMAND, "stop_all", None))

    def close(self) -> None:
        """Stop everything and end ``run()`` once every child has exited; add() is refused."""
        with self._lock:
            self._closed = True
        self._inbox.put((COMMAND, "close", None))

    def states(self) -> dict[str, str]:
        """Run id -> queued | running | paused | done | failed | stopped, in the order added.

        The last three follow the runner's own finished / failed event (its process may take a
        moment more to exit; in the sequential schedule the next run starts after that)."""
        with self._lock:
            return dict(self._states)

    def live_pids(self) -> dict[str, int]:
        """Run id -> runner pid of the children alive now (read by the sampler thread)."""
        return {run: r.child.proc.pid for run, r in list(self._live.items())}

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
            self._control(run, action, **variant.fields(),
                          **({"replaces": replaces} if replaces else {}))
            self._enqueue(run, variant, replaces)
        elif action == "restart":
            new, variant = extra
            self._control(run, action, new_run=new, **variant.fields())
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
        self._inbox.put((COMMAND, action, run))

    def _control(self, run: str | None, action: str, **fields) -> None:
        self._record([events.make(events.CONTROL, run, action=action, **fields)])
