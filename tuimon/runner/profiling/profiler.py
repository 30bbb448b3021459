"""The runner's profiler front: requests queue here and one capture at a time opens at a step
boundary; what it costs at boundaries is counted apart from the steps."""

from __future__ import annotations

import contextlib
import math
import os
import time

from tuimon.runner.profiling.capture import Capture, one_line
from tuimon.runner.profiling.options import Options
from tuimon.runner.refs import weak

# The automatic diagnosis capture (source "auto"), taken when a run has none: a short window
# (one step to absorb the profiler's start, two kept), once the compiles have settled, and only
# in a run planned for AUTO_MIN_STEPS steps or more (or a --duration), so a short run keeps its
# steps. Taking turns (the interleaved schedule), it opens as the run's second turn begins: the
# session's other processes have built their models and compiled by then (during the first turn
# they load the machine), and a whole turn lies ahead. Otherwise it is looked for from AUTO_FROM
# and opens after AUTO_SETTLE steps without a compile (after AUTO_TRIES looks it opens anyway: a
# run that keeps recompiling is worth a look too). Cut short by a turn's end, it is taken once
# more in a window that fits the steps that turn held; one that recorded nothing is "quiet":
# nobody asked for it, so its failure is a note in the summary, never a line of its own.
AUTO = Options(wait=0, warmup=1, active=2, backward=False)
AUTO_FROM, AUTO_SETTLE, AUTO_TRIES, AUTO_MIN_STEPS = 10, 5, 4, 30

# A span that began while a capture recorded and ends while the next one records has torch write
# its end into the first capture's freed memory (torch's thread-local profiler callback does not
# check which session the span began in): heap corruption, a crash much later (docs/profiler.md,
# the crash under capture). A script's step boundary runs inside optimizer.step(), in torch's
# ``Optimizer.step#...`` span, which the last step of a window opened: that span ends when this
# optimizer.step() returns, so no capture opens at the boundary where one closed. A span that
# outlives the step (a script's own record_function) ends who knows when: no capture opens again.
BOUNDARY_SPAN = "Optimizer.step#"


class Profiler:
    """The runner's profiler front: takes requests, opens a Capture at a step boundary, hands the
    loop the open capture (or None: the loop's plain path), and turns a finished one into an
    event. ``overhead_s`` is the time spent at step boundaries starting and finishing captures
    (outside every step time; the loop keeps it out of ``--duration``)."""

    def __init__(self, *, device_type: str, model, compiled: bool, defaults: Options | None = None,
                 at_step: int | None = None, out_dir: str | None = None, run: str = "run",
                 hook_guards: bool = False, auto: bool = False, steps: int | None = None,
                 turns: bool = False) -> None:
        self.device_type = device_type
        self._model = None
        self.model = model
        self.compiled = compiled
        self.defaults = defaults or Options()
        self.at_step = at_step
        self.out_dir = out_dir
        self.run = run
        self.hook_guards = hook_guards
        self.capture: Capture | None = None
        self.count = 0
        self.overhead_s = 0.0
        self._pending: list[tuple[Options, str]] = []
        # The automatic capture: (the step to look at next, compiles seen then, looks so far);
        # None when off, asked for a capture at a step already, or too short a run.
        short = steps is not None and steps < max(AUTO_MIN_STEPS, AUTO_FROM + AUTO.steps)
        first = math.inf if turns else AUTO_FROM - AUTO_SETTLE  # taking turns: turn_began arms it
        self._auto = [first, None, 0] if auto and at_step is None and not short else None
        self._turns = 0
        self._steps = steps
        self._retried = False
        self._auto_options = AUTO  # the retry's window fits the steps a turn held
        self._asked = False  # a capture other than the automatic one was taken
        self._held_at: int | None = None  # the boundary where a capture closed inside a span
        self._blocked: str | None = None  # why no capture may open again in this process
        self.outer = False  # a script's: captures name the modules outside the trained one

    @property
    def model(self):
        """The model whose modules a capture names; held weakly (a script's model goes when the
        script lets it go: runner/script/phases.py says why)."""
        return self._model() if self._model is not None else None

    @model.setter
    def model(self, model) -> None:
        self._model = weak(model)

    def turn_began(self) -> None:
        """The interleaved schedule gave the run its turn: from the second one, the automatic
        capture opens at this boundary."""
        self._turns += 1
        if self._auto is not None and self._turns >= 2:
            self._auto = [0, -1, AUTO_TRIES]

    def next_step(self, default: int | float) -> int | float:
        """The next step boundary at which ``begin_step`` has something to do when no capture is
        open and none is asked for (the loop skips the call until then)."""
        due = [x for x in (self.at_step, self._auto[0] if self._auto else None)
               if x is not None and x != math.inf]
        if self._pending and self._held_at is not None:
            due.append(self._held_at + 1)
        return min(due) if due else default

    def request(self, overrides: dict, source: str = "control") -> None:
        """Ask for a capture at the next step boundary (after the open one, if any).
        ValueError for bad options (nothing is queued)."""
        self._pending.append((self.defaults.merged(overrides), source))

    def begin_step(self, i: int, compiles: int = 0) -> tuple[Capture | None, dict | None]:
        """At a step boundary: the open capture (or None), and a ``profile`` started event's
        fields when one opens here."""
        if self.capture is not None:
            self.capture.prepare()
            return self.capture, None
        if self.at_step is not None and i >= self.at_step:
            self._pending.insert(0, (self.defaults, "profile_at"))
            self.at_step = None
        if self._auto is not None and (self._asked or self._pending):
            self._auto = None  # a capture was asked for: the diagnosis reads that one
        elif self._auto is not None and i >= self._auto[0]:
            self._look(i, compiles)
        if not self._pending or (self._held_at is not None and i <= self._held_at):
            return None, None  # held: the next boundary, outside the span (BOUNDARY_SPAN)
        t0 = time.perf_counter()
        options, source = self._pending.pop(0)
        self.count += 1
        self._asked = self._asked or source != "auto"
        if self._blocked is not None:
            failed = {"state": "failed", "capture": self.count, "notes": [],
                      "error": f"the profiler did not start: {self._blocked}"}
            return None, {**failed, "source": source, "quiet": True} if source == "auto" else failed
        # The automatic capture writes no chrome trace: the diagnosis reads the tables only.
        path = (os.path.join(self.out_dir, f"{self.run}-profile{self.count}.json")
                if self.out_dir and source != "auto" else None)
        cap = None
        try:
            cap = Capture(self.count, options, source, i, device_type=self.device_type,
                          model=self.model, compiled=self.compiled, hook_guards=self.hook_guards,
                          trace_path=path, compiles_before=compiles, outer=self.outer)
            cap.prepare()
        except Exception as exc:  # noqa: BLE001 - no profiler here: say so, train on
            if cap is not None:
                with contextlib.suppress(Exception):
                    cap.close()
            self.overhead_s += time.perf_counter() - t0
            failed = {"state": "failed", "capture": self.count, "notes": [],
                      "error": f"the profiler did not start: {one_line(exc)}"}
            return None, {**failed, "source": source, "quiet": True} if source == "auto" else failed
        self.capture = cap
        started = {"state": "started", "capture": cap.number, "source": source,
                   "window": options.window(), "backward": options.backward, "first_step": i,
                   "active_steps": [i + options.wait + options.warmup, i + options.steps - 1],
                   "module_spans": bool(cap.modules), "notes": list(cap.notes)}
        self.overhead_s += time.perf_counter() - t0
        return cap, started

    def _look(self, i: int, compiles: int) -> None:
        """The automatic capture's look at step ``i``: queue it once AUTO_SETTLE steps went by
        without a compile (or after AUTO_TRIES looks), if its window fits in the run."""
        at, seen, looks = self._auto
        if self._steps is not None and i + AUTO.steps > self._steps:
            self._auto = None  # it would be cut short by the end of the run
        elif seen is not None and (seen == compiles or looks >= AUTO_TRIES):
            self._pending.append((self._auto_options, "auto"))
            self._auto = None
        else:
            self._auto = [i + AUTO_SETTLE, compiles, looks + (seen is not None)]

    def after_step(self, i: int, compiles: int = 0) -> tuple[int | None, dict | None]:
        """After the step's clock stopped: (the capture number if step ``i`` was recorded, the
        ``profile`` event's fields when the capture finished with this step)."""
        cap = self.capture
        if cap is None:
            return None, None
        t0 = time.perf_counter()
        recording = cap.recording
        try:
            recorded = cap.after_step(i)
            result = self._finish(compiles) if cap.done else None
        except Exception as exc:  # noqa: BLE001 - a failed capture must never fail the run
            cap.notes.append(f"the profiler failed at step {i}: {one_line(exc)}")
            recorded = cap.number if recording else None
            result = self._finish(compiles)
        self.overhead_s += time.perf_counter() - t0
        return recorded, result

    def abort(self, compiles: int = 0) -> dict | None:
        """The run is ending: close an open capture; its event's fields (partial or failed)."""
        return self._finish(compiles) if self.capture is not None else None

    def _finish(self, compiles: int) -> dict:
        cap, self.capture = self.capture, None
        try:
            cap.close()
            result = cap.result(compiles)
        except Exception as exc:  # noqa: BLE001 - a failed capture must never fail the run
            with contextlib.suppress(Exception):
                if cap.spans is not None:
                    cap.spans.remove()
            result = {"capture": cap.number, "state": "failed", "notes": cap.notes,
                      "error": one_line(exc)}
        held = self._spans_left(cap, result)
        cut = result["state"] != "done" or result.get("partial")
        if cap.source == "auto" and cut and not self._retried and self._blocked is None:
            # Cut short (the end of a turn of the interleaved schedule paused the run): once more,
            # at the next boundary, which after a turn's pause has a whole turn ahead of it, in a
            # window of as many steps as this turn held (slow steps: one a turn). Held off that
            # boundary (a script's, BOUNDARY_SPAN), it opens a step into the turn: one step less.
            self._retried = True
            self._auto = [0, -1, AUTO_TRIES]
            room = cap.k - held
            if cap.k < AUTO.steps:
                self._auto_options = Options(wait=0, warmup=0, active=max(1, min(room, AUTO.active)),
                                             backward=False)
        if cap.source == "auto" and result["state"] == "failed":
            result["quiet"] = True  # nobody asked for it: a note in the summary, no failure said
        return result

    def _spans_left(self, cap: Capture, result: dict) -> bool:
        """After a capture closed: hold the next one off this boundary (True), or off the rest
        of the run, by the spans it left open (BOUNDARY_SPAN says why)."""
        left = cap.left_open
        if left is None and not cap.active_steps:
            return False  # it never recorded (a warm-up cut short): no span points into it
        held = left is None or any(name.startswith(BOUNDARY_SPAN) for name in left)
        if held:
            self._held_at = cap.first_step + cap.k  # where it closed: begin_step's i there
        others = sorted({name for name in left or () if not name.startswith(BOUNDARY_SPAN)})
        if others:
            names = ", ".join(others[:3]) + (f" and {len(others) - 3} more" if len(others) > 3 else "")
            self._blocked = (f"{names}, begun inside capture {cap.number}, had not ended when it "
                             "stopped; ending under another capture, torch would write into the "
                             "first one's freed memory (docs/profiler.md)")
            self._auto = None
            note = f"no further capture in this process: {self._blocked}"
            if note not in cap.notes:
                cap.notes.append(note)
            result["notes"] = cap.notes
        return held

