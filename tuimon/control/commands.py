"""The supervisor's commands: asked from any thread (the TUI's, the daemon's), put into the
inbox and applied on the loop thread within a tick, each recorded as a ``control`` event. The
``Commands`` the supervisor owns (its public control methods hand over to it); a command that
no longer applies when it arrives is dropped."""

from __future__ import annotations

import json
import queue
import signal
from collections.abc import Callable

from tuimon import events
from tuimon.control.runs import RunTable, check_profile_options
from tuimon.control.stopping import Stopper
from tuimon.variants import Variant

EVENTS, EOF, COMMAND = "events", "eof", "command"  # kinds of inbox items


class Commands:
    """``enqueue(run, variant, replaces=, after=, first=)``: the supervisor's way to queue a run;
    ``log_path(run)``: where a run's log is (said with a ``dump``)."""

    def __init__(self, table: RunTable, inbox: queue.Queue, record, stopper: Stopper,
                 enqueue: Callable, log_path: Callable) -> None:
        self.table, self.inbox, self.record, self.stopper = table, inbox, record, stopper
        self.enqueue, self.log_path = enqueue, log_path

    # ---- from any thread -------------------------------------------------------------------
    def add(self, variant: Variant, replaces: str | None = None) -> str:
        if replaces is not None:
            self.table.variant_of(replaces)  # must be a run of this session
        run = self.table.allocate(variant)
        self.inbox.put((COMMAND, "add", run, variant, replaces))
        return run

    def restart(self, run: str, variant: Variant | None = None) -> str:
        new = self.table.allocate(variant or self.table.variant_of(run))
        self.inbox.put((COMMAND, "restart", run, new, self.table.variant_of(new)))
        return new

    def profile(self, run: str, options: dict) -> None:
        check_profile_options(options)
        self.table.variant_of(run)
        self.inbox.put((COMMAND, "profile", run, dict(options)))

    def on_run(self, action: str, run: str) -> None:
        """stop, pause, resume, dump."""
        self.table.variant_of(run)  # an unknown id is the caller's bug: say so in its thread
        self.inbox.put((COMMAND, action, run))

    def on_all(self, action: str) -> None:
        """stop_all, close (which refuses add() from now on)."""
        if action == "close":
            self.table.close()
        self.inbox.put((COMMAND, action, None))

    # ---- on the loop thread ----------------------------------------------------------------
    def drop(self, action: str, run: str | None, *extra) -> None:
        """The session is over: forget runs that were never queued."""
        if action in ("add", "restart"):
            self.table.forget(run if action == "add" else extra[0])

    def apply(self, action: str, run: str | None, *extra) -> bool:
        """Apply one command; True when it closes the session."""
        r = self.table.runs.get(run) if run is not None else None
        stopper = self.stopper
        if action == "add":
            variant, replaces = extra
            self._control(run, action, **variant.fields(),
                          **({"replaces": replaces} if replaces else {}))
            self.enqueue(run, variant, replaces)
        elif action == "restart":
            new, variant = extra
            self._control(run, action, new_run=new, **variant.fields())
            if r is not None:
                stopper.stop(r)
            self.enqueue(new, variant, replaces=run, after=run, first=True)
        elif action == "stop" and r is not None and stopper.stoppable(r):
            self._control(run, action)
            stopper.stop(r)
        elif action == "pause" and r is not None and stopper.controllable(r) and not r.pause_asked:
            self._control(run, action)
            r.pause_asked = r.child.send("pause")
        elif action == "resume" and r is not None and stopper.controllable(r) and r.pause_asked:
            self._control(run, action)
            r.pause_asked = not r.child.send("resume")
        elif action == "dump" and r is not None and r.child is not None and not r.state.ended:
            self._control(run, action, log=str(self.log_path(run)))
            r.child.signal(signal.SIGUSR1)
        elif action == "profile" and r is not None and stopper.controllable(r):
            options = extra[0]
            self._control(run, action, **({"options": options} if options else {}))
            r.child.send("profile" + (f" {json.dumps(options)}" if options else ""))
        elif action in ("stop_all", "close"):
            self._control(None, action)
            stopper.stop_everything()
            return action == "close"
        return False

    def _control(self, run: str | None, action: str, **fields) -> None:
        self.record([events.make(events.CONTROL, run, action=action, **fields)])
