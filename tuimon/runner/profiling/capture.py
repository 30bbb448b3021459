"""One capture's lifecycle: a window of steps under torch.profiler, opened at a step boundary,
module hooks on while it records, stopped and dropped after its last active step, and its
``profile`` event built once, outside every timed step."""

from __future__ import annotations

import os
import time
import warnings

from tuimon.runner.profiling.analysis import analyse
from tuimon.runner.profiling.event_tree import no_gc, read_window, unlink
from tuimon.runner.profiling.kineto_log import KinetoLog
from tuimon.runner.profiling.labels import LABEL
from tuimon.runner.profiling.module_spans import ModuleSpans, block_modules
from tuimon.runner.profiling.options import Options
from tuimon.runner.profiling.outer_spans import OuterSpans

HOOK_FAILURE = "BackwardHookFunction"  # in the message of the in-place failure of a backward hook


class Capture:
    """One window of steps under torch.profiler. Created at a step boundary by ``Profiler``."""

    def __init__(self, number: int, options: Options, source: str, first_step: int, *,
                 device_type: str, model, compiled: bool, hook_guards: bool, trace_path: str | None,
                 compiles_before: int, outer: bool = False) -> None:
        import torch
        from torch.profiler import ProfilerActivity, profile, record_function, schedule

        self.number = number
        self.options = options
        self.source = source
        self.first_step = first_step
        self.device_type = device_type
        self.trace_path = trace_path
        self.compiles_before = compiles_before
        self.notes: list[str] = []
        self.k = 0  # steps of the window done
        self.recorded: list[int] = []  # step indices the profiler recorded (warm-up and active)
        self.active_steps: list[int] = []
        self._record_function = record_function
        self._events = None
        self._trace_bytes = None
        self._export_s = None
        self._events_s = None
        # The spans the profiler stopped inside (event_tree.spans_left_open); None: not known
        # (the window never recorded, or reading its events failed).
        self.left_open: list[str] | None = None
        # Hooks go on when the profiler starts recording (not in the wait steps, which run the
        # loop's plain path and count as normal steps).
        self.modules, self.backward_hooks = self._plan_spans(model, compiled, hook_guards)
        self.spans: ModuleSpans | None = None
        # A script's outermost module calls as spans (outer_spans.py): what ran outside the
        # trained module, named in the event's ``outside`` table. Not on a compiled variant: a
        # global module hook recompiles its graphs, or is compiled as a frame of its own.
        self.outer = outer
        self.outer_modules = not compiled
        self.outer_spans: OuterSpans | None = None
        activities = [ProfilerActivity.CPU]
        if device_type == "cuda" and torch.cuda.is_available():
            activities.append(ProfilerActivity.CUDA)
        self.activities = ["cuda" if a == ProfilerActivity.CUDA else "cpu" for a in activities]
        with warnings.catch_warnings():  # "won't be using warmup": asked for, and said in the event
            warnings.simplefilter("ignore")
            when = schedule(wait=options.wait, warmup=options.warmup, active=options.active, repeat=1)
        self.prof = profile(activities=activities, schedule=when, on_trace_ready=self._ready)
        # Kineto's own lines (profiler_start / stop) stay out of the run's log: kineto_log.py.
        self.kineto = KinetoLog(self.notes, gpu="cuda" in self.activities)
        with self.kineto:
            self.prof.__enter__()

    def _plan_spans(self, model, compiled: bool, hook_guards: bool) -> tuple[list, bool]:
        """(modules to label, whether with backward hooks); notes say why not."""
        backward = bool(self.options.backward)
        if compiled and self.options.backward != "all":
            if backward:
                self.notes.append(
                    "backward attribution skipped on a compiled variant: module hooks under "
                    "torch.compile cost graph breaks and recompiles (ask with backward \"all\", "
                    "on a run started with --profile-backward all)")
            return [], False
        if compiled and not hook_guards:
            self.notes.append(
                "module spans not applied: Dynamo ignores module hooks added after compilation; "
                "start the run with --profile-backward all to have them (graph breaks, recompiles)")
            return [], False
        modules = block_modules(model) if model is not None else []
        if model is None:
            self.notes.append("no module spans: tuimon does not know the script's model")
        elif not modules:
            if backward:
                self.notes.append("backward attribution: the model has no submodules to label")
            return [], False
        if compiled:
            self.notes.append(
                "module hooks on a compiled variant: record_function in a hook breaks the graph and "
                "module backward hooks need compiled autograd, so these steps ran with graph breaks "
                "and recompiles; they do not show the compiled variant's normal speed")
        return modules, backward

    @property
    def recording(self) -> bool:
        """The profiler records this step (warm-up or active): labels and hooks are on."""
        return self.k >= self.options.wait

    def prepare(self) -> None:
        """At the boundary before a step: put the module hooks on once the profiler records."""
        if self.recording and self.spans is None and self.modules and self.prof is not None:
            self.spans = ModuleSpans(self.modules, self.backward_hooks)
        if self.recording and self.outer and self.outer_spans is None and self.prof is not None:
            self.outer_spans = OuterSpans(modules=self.outer_modules)
            self.outer_spans.install()

    # -- per step, called by the loop --
    def label(self, name: str):
        return self._record_function(LABEL + name)

    @property
    def phase(self) -> str:
        o = self.options
        return "wait" if self.k < o.wait else "warmup" if self.k < o.wait + o.warmup else "active"

    def hooks_failed(self, exc: BaseException) -> bool:
        """A step raised: if it was the in-place failure of a backward hook, drop the backward
        hooks (the loop runs the step again without them) and return True."""
        if self.spans is None:
            return False
        self.spans.end_step()
        if not self.spans.backward or HOOK_FAILURE not in str(exc):
            return False
        self.spans.remove_backward()
        self.backward_hooks = False
        self.notes.append("backward attribution dropped: an in-place op modified the output of a "
                          f"hooked module ({str(exc).splitlines()[0][:160]}); the step was run again "
                          "without backward hooks")
        return True

    def end_backward(self) -> None:
        if self.spans is not None:
            self.spans.end_backward()

    def after_step(self, i: int) -> int | None:
        """The step ``i`` ended (its clock stopped). Returns the capture number if the profiler
        recorded that step (it is then kept out of the steady state), else None."""
        phase = self.phase
        if self.spans is not None:
            self.spans.end_step()
        if phase != "wait":
            self.recorded.append(i)
        if phase == "active":
            self.active_steps.append(i)
        self.k += 1
        with self.kineto:
            self.prof.step()  # at the end of the last active step: stops and calls _ready
        return self.number if phase != "wait" else None

    @property
    def done(self) -> bool:
        return self.k >= self.options.steps

    def _ready(self, prof) -> None:
        if self.trace_path:
            t0 = time.perf_counter()
            try:
                os.makedirs(os.path.dirname(self.trace_path) or ".", exist_ok=True)
                prof.export_chrome_trace(self.trace_path)
                self._trace_bytes = os.path.getsize(self.trace_path)
            except OSError as exc:
                self.notes.append(f"chrome trace not written: {exc}")
                self.trace_path = None
            self._export_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        with no_gc():
            self._events, self.left_open = read_window(prof)
        self._events_s = time.perf_counter() - t0

    def close(self) -> None:
        """Stop the profiler (a window cut short still hands over its active steps) and remove
        every hook. Idempotent."""
        if self.prof is not None:
            prof, self.prof = self.prof, None
            try:
                with self.kineto:
                    prof.__exit__(None, None, None)
            finally:
                if self.spans is not None:
                    self.spans.remove()
                if self.outer_spans is not None:
                    self.outer_spans.remove()

    def result(self, compiles_after: int) -> dict:
        """The ``profile`` event's fields (state done), or (state failed) when nothing was kept."""
        head = {"capture": self.number, "source": self.source, "window": self.options.window(),
                "backward": self.options.backward, "first_step": self.first_step,
                "recorded_steps": self.recorded, "active_steps": self.active_steps,
                "activities": self.activities}
        compiles = compiles_after - self.compiles_before
        if compiles:
            self.notes.append(f"{compiles} compile(s) ran inside the window")
        if self._events is None or not self.active_steps:
            return {**head, "state": "failed", "notes": self.notes,
                    "error": f"the window ended before any active step was recorded "
                             f"({self.k} of {self.options.steps} window steps ran)"}
        t0 = time.perf_counter()
        with no_gc():
            tables = analyse(self._events, module_names=[name for name, _ in self.modules],
                             backward=self.backward_hooks, steps=len(self.active_steps),
                             outer=self.outer, outer_modules=self.outer_modules)
            unlink(self._events)
        build_s = time.perf_counter() - t0
        partial = len(self.active_steps) < self.options.active
        if partial:
            self.notes.append(f"cut short: {len(self.active_steps)} of {self.options.active} "
                              "active steps recorded")
        return {**head, "state": "done", "partial": partial, **tables,
                "trace": os.path.abspath(self.trace_path) if self.trace_path else None,
                "trace_bytes": self._trace_bytes,
                "cost": {"events": len(self._events), "events_s": _r(self._events_s, 4),
                         "build_s": _r(build_s, 4), "export_s": _r(self._export_s, 4)},
                "compiles": compiles, "notes": self.notes}



def one_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0][:300]}" if text else type(exc).__name__


def _r(x: float | None, digits: int = 3) -> float | None:
    return None if x is None else round(x, digits)
