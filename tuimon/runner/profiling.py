"""On-demand torch.profiler capture of a window of steps, and what the profiler pane shows.

A capture is asked for by a control line (``profile`` or ``profile {"active": 3, ...}``) or by
``--profile-at STEP``. It starts at the next step boundary and covers ``wait + warmup + active``
steps (torch.profiler's schedule, default 1 / 2 / 3): nothing is recorded in the wait steps, the
warm-up steps are recorded and thrown away, the active steps are kept. After the last active
step the profiler is stopped and dropped, hooks are removed, and the loop is back to its normal
code path: no profiler object, label or hook is alive outside a window.

While the profiler records (warm-up and active steps) the loop wraps the data fetch, forward,
backward, optimizer and its own loss read in ``record_function`` labels (``tuimon: forward``
...). Otherwise, wait steps included, the loop takes its plain path: the only cost is one
``is None`` check per step (a label costs ~4 µs even with no profiler running, so none is left
on). Recorded steps are marked ``profiled`` and kept out of the steady state.

Module spans. On an eager variant every block-level module (see ``block_modules``) gets forward
pre/post hooks that open a ``forward: NAME`` span, so a scalar read inside a submodule's forward
is named by the module. With backward attribution on, the same modules get
``register_full_backward_pre_hook`` / ``register_full_backward_hook`` opening ``backward: NAME``.
Blocks, not leaves: a full backward hook wraps the module's inputs and outputs in views, and an
in-place op on one of them (``ReLU(inplace=True)`` after the module, ``out += identity``) fails
with "Output 0 of BackwardHookFunction is a view and is being modified inplace". Modules that
look in-place are skipped; if a step still fails that way the backward hooks are removed, the
step is run again without them, and the capture says so.

Compiled variants get no module spans unless asked with ``backward: "all"``: Dynamo ignores
module hooks added after compilation (``skip_nnmodule_hook_guards``), and honouring them costs
graph breaks (``record_function`` in a hook breaks the graph; module backward hooks need compiled
autograd) and recompiles. The runner turns the hook guards on at start-up only when started with
``--profile-backward all``; the event's notes say what it cost (compiles inside the window).

Results are built once, after the window, at a step boundary (outside every timed step): top ops
by self time, the step split, per-module forward/backward time, and the sync findings, from
kineto's raw events (``light_events``: ~10x faster than torch's FunctionEvent list, which
``key_averages`` needs). Their cost is in the event (``cost``), and the chrome trace is written
next to the session's events.
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import time
import warnings
from collections import defaultdict
from dataclasses import dataclass

LABEL = "tuimon: "  # the loop's own labels: data, forward, backward, optimizer, loss read
FWD, BWD = "forward: ", "backward: "  # module spans
SPLIT = ("data", "forward", "backward", "optimizer")
LOSS_READ = "loss read"  # the runner's own scalar read of the loss (CPU only; async on CUDA)
TOP_N = 30
SCALAR_READS = ("aten::item", "aten::_local_scalar_dense")
SYNC_CALLS = ("cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize", "cudaMemcpy")
ENGINE = "autograd::engine::evaluate_function: "  # the autograd engine's wrapper of a backward node
HOOK_FAILURE = "BackwardHookFunction"  # in the message of the in-place failure of a backward hook
OPTION_KEYS = ("wait", "warmup", "active", "backward")


# ---- options and requests -------------------------------------------------------------------
@dataclass(frozen=True)
class Options:
    wait: int = 1
    warmup: int = 2
    active: int = 3
    backward: bool | str = False  # False; True: eager variants; "all": compiled ones too

    @property
    def steps(self) -> int:
        return self.wait + self.warmup + self.active

    def window(self) -> dict:
        return {"wait": self.wait, "warmup": self.warmup, "active": self.active}

    def merged(self, overrides: dict) -> Options:
        """These options with ``overrides`` (a control line's JSON) applied; ValueError if bad."""
        unknown = sorted(set(overrides) - set(OPTION_KEYS))
        if unknown:
            raise ValueError(f"unknown profile option(s): {', '.join(unknown)}")
        values = {**self.__dict__, **overrides}
        for key, low in (("wait", 0), ("warmup", 0), ("active", 1)):
            if not isinstance(values[key], int) or isinstance(values[key], bool) or values[key] < low:
                raise ValueError(f"profile option {key} must be a whole number >= {low}")
        if values["backward"] not in (True, False, "all", "eager"):
            raise ValueError("profile option backward must be true, false or \"all\"")
        if values["backward"] == "eager":
            values["backward"] = True
        return Options(**{k: values[k] for k in OPTION_KEYS})


def parse_window(text: str) -> tuple[int, int, int]:
    """``"1,2,3"`` -> (wait, warmup, active); ValueError with a one-line message."""
    parts = text.split(",")
    try:
        wait, warmup, active = (int(p) for p in parts)
    except ValueError:
        raise ValueError(f"expected WAIT,WARMUP,ACTIVE (three whole numbers), got {text!r}") from None
    if wait < 0 or warmup < 0 or active < 1:
        raise ValueError(f"expected WAIT >= 0, WARMUP >= 0, ACTIVE >= 1, got {text!r}")
    return wait, warmup, active


def parse_command(line: str) -> dict | None:
    """The options of a ``profile [JSON]`` control line; None when the line is something else.

    Raises ValueError when the line is a profile command with unreadable options."""
    word, _, rest = line.partition(" ")
    if word != "profile":
        return None
    rest = rest.strip()
    if not rest:
        return {}
    try:
        options = json.loads(rest)
    except ValueError:
        raise ValueError(f"profile options are not JSON: {rest[:80]!r}") from None
    if not isinstance(options, dict):
        raise ValueError("profile options must be a JSON object")
    return options


# ---- which modules get spans --------------------------------------------------------------------
def block_modules(model) -> list[tuple[str, object]]:
    """Block-level submodules, in definition order, that can take module hooks.

    ModuleList / ModuleDict (never called themselves) and Sequentials of non-leaf modules are
    opened up; any other module is a block. Skipped: Identity, modules with ``inplace=True``
    and modules followed by one (their output would be modified in place, which a full
    backward hook does not allow). Blocks never nest, so their spans never double count.
    """
    from torch import nn

    out: list[tuple[str, object]] = []

    def visit(prefix: str, parent) -> None:
        children = list(parent.named_children())
        for k, (name, mod) in enumerate(children):
            full = prefix + name
            if isinstance(mod, (nn.ModuleList, nn.ModuleDict)) or (
                    isinstance(mod, nn.Sequential) and any(_has_children(c) for c in mod.children())):
                visit(full + ".", mod)
                continue
            after = children[k + 1][1] if k + 1 < len(children) else None
            if isinstance(mod, nn.Identity) or _inplace(mod) or (after is not None and _inplace(after)):
                continue
            out.append((full, mod))

    visit("", model)
    return out


def _has_children(module) -> bool:
    return next(module.children(), None) is not None


def _inplace(module) -> bool:
    return getattr(module, "inplace", False) is True


class ModuleSpans:
    """Forward (and optionally backward) ``record_function`` spans on block-level modules."""

    def __init__(self, modules: list[tuple[str, object]], backward: bool) -> None:
        import torch

        self._enter = torch.ops.profiler._record_function_enter_new
        self._exit = torch.ops.profiler._record_function_exit._RecordFunction
        self._queue_callback = torch.autograd.Variable._execution_engine.queue_callback
        self.names = [name for name, _ in modules]
        self.backward = backward
        self._handles: list = []
        self._fwd: dict[str, list] = defaultdict(list)
        self._bwd: dict[str, list] = defaultdict(list)
        self._deferred: list = []  # backward spans of modules whose inputs need no grad
        for name, mod in modules:
            self._handles.append(mod.register_forward_pre_hook(self._fwd_pre(name)))
            self._handles.append(mod.register_forward_hook(self._fwd_post(name), always_call=True))
        self._bwd_handles: list = []
        if backward:
            # Fired for modules whose inputs need no grad (the first block): harmless here.
            warnings.filterwarnings("ignore", message="Full backward hook is firing when gradients")
            for name, mod in modules:
                self._bwd_handles.append(mod.register_full_backward_pre_hook(self._bwd_pre(name)))
                self._bwd_handles.append(mod.register_full_backward_hook(self._bwd_post(name)))

    def _fwd_pre(self, name):
        label = FWD + name

        def hook(module, args):
            self._fwd[name].append(self._enter(label, None))
        return hook

    def _fwd_post(self, name):
        def hook(module, args, output):
            if self._fwd[name]:
                self._exit(self._fwd[name].pop())
        return hook

    def _bwd_pre(self, name):
        label = BWD + name

        def hook(module, grad_output):
            self._close_deferred()
            self._bwd[name].append(self._enter(label, None))
        return hook

    def _bwd_post(self, name):
        def hook(module, grad_input, grad_output):
            if not self._bwd[name]:
                return
            handle = self._bwd[name].pop()
            if all(g is None for g in grad_input):
                # No input needs a grad: torch fires this hook as soon as the output grads are
                # in, before the module's own weight grads. Keep the span open until the next
                # module's backward starts or backward ends (closed by autograd's end-of-backward
                # callback, on the same thread as the hooks: on a GPU that is not the main one).
                if not self._deferred:
                    with contextlib.suppress(RuntimeError):  # else end_backward closes it
                        self._queue_callback(self._close_deferred)
                self._deferred.append(handle)
            else:
                self._exit(handle)
        return hook

    def _close_deferred(self) -> None:
        while self._deferred:
            self._exit(self._deferred.pop())

    def end_backward(self) -> None:
        """After ``loss.backward()``: close what is still open (deferred spans)."""
        self._close_deferred()
        for stack in self._bwd.values():
            while stack:
                self._exit(stack.pop())

    def end_step(self) -> None:
        """A step that raised may leave forward spans open."""
        for stack in self._fwd.values():
            while stack:
                self._exit(stack.pop())
        self.end_backward()

    def remove_backward(self) -> None:
        for h in self._bwd_handles:
            h.remove()
        self._bwd_handles = []
        self.backward = False
        self.end_backward()

    def remove(self) -> None:
        self.end_step()
        for h in self._handles + self._bwd_handles:
            h.remove()
        self._handles, self._bwd_handles = [], []


# ---- the capture ------------------------------------------------------------------------------
class Capture:
    """One window of steps under torch.profiler. Created at a step boundary by ``Profiler``."""

    def __init__(self, number: int, options: Options, source: str, first_step: int, *,
                 device_type: str, model, compiled: bool, hook_guards: bool, trace_path: str | None,
                 compiles_before: int) -> None:
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
        # Hooks go on when the profiler starts recording (not in the wait steps, which run the
        # loop's plain path and count as normal steps).
        self.modules, self.backward_hooks = self._plan_spans(model, compiled, hook_guards)
        self.spans: ModuleSpans | None = None
        activities = [ProfilerActivity.CPU]
        if device_type == "cuda" and torch.cuda.is_available():
            activities.append(ProfilerActivity.CUDA)
        self.activities = ["cuda" if a == ProfilerActivity.CUDA else "cpu" for a in activities]
        with warnings.catch_warnings():  # "won't be using warmup": asked for, and said in the event
            warnings.simplefilter("ignore")
            when = schedule(wait=options.wait, warmup=options.warmup, active=options.active, repeat=1)
        self.prof = profile(activities=activities, schedule=when, on_trace_ready=self._ready)
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
        modules = block_modules(model)
        if not modules:
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
        with _no_gc():
            self._events = light_events(prof)
        self._events_s = time.perf_counter() - t0

    def close(self) -> None:
        """Stop the profiler (a window cut short still hands over its active steps) and remove
        every hook. Idempotent."""
        if self.prof is not None:
            prof, self.prof = self.prof, None
            try:
                prof.__exit__(None, None, None)
            finally:
                if self.spans is not None:
                    self.spans.remove()

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
        with _no_gc():
            tables = analyse(self._events, module_names=[name for name, _ in self.modules],
                             backward=self.backward_hooks, steps=len(self.active_steps))
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


class Profiler:
    """The runner's profiler front: takes requests, opens a Capture at a step boundary, hands the
    loop the open capture (or None: the loop's plain path), and turns a finished one into an
    event. ``overhead_s`` is the time spent at step boundaries starting and finishing captures
    (outside every step time; the loop keeps it out of ``--duration``)."""

    def __init__(self, *, device_type: str, model, compiled: bool, defaults: Options | None = None,
                 at_step: int | None = None, out_dir: str | None = None, run: str = "run",
                 hook_guards: bool = False) -> None:
        self.device_type = device_type
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
        if not self._pending:
            return None, None
        t0 = time.perf_counter()
        options, source = self._pending.pop(0)
        self.count += 1
        path = (os.path.join(self.out_dir, f"{self.run}-profile{self.count}.json")
                if self.out_dir else None)
        cap = None
        try:
            cap = Capture(self.count, options, source, i, device_type=self.device_type,
                          model=self.model, compiled=self.compiled, hook_guards=self.hook_guards,
                          trace_path=path, compiles_before=compiles)
            cap.prepare()
        except Exception as exc:  # noqa: BLE001 - no profiler here: say so, train on
            if cap is not None:
                with contextlib.suppress(Exception):
                    cap.close()
            self.overhead_s += time.perf_counter() - t0
            return None, {"state": "failed", "capture": self.count, "notes": [],
                          "error": f"the profiler did not start: {_one_line(exc)}"}
        self.capture = cap
        started = {"state": "started", "capture": cap.number, "source": source,
                   "window": options.window(), "backward": options.backward, "first_step": i,
                   "active_steps": [i + options.wait + options.warmup, i + options.steps - 1],
                   "module_spans": bool(cap.modules), "notes": list(cap.notes)}
        self.overhead_s += time.perf_counter() - t0
        return cap, started

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
            cap.notes.append(f"the profiler failed at step {i}: {_one_line(exc)}")
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
            return cap.result(compiles)
        except Exception as exc:  # noqa: BLE001 - a failed capture must never fail the run
            with contextlib.suppress(Exception):
                if cap.spans is not None:
                    cap.spans.remove()
            return {"capture": cap.number, "state": "failed", "notes": cap.notes,
                    "error": _one_line(exc)}


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0][:300]}" if text else type(exc).__name__


# ---- the tables ---------------------------------------------------------------------------------
class Ev:
    """One profiler event, lighter than torch's FunctionEvent (building those for a ViT window of
    29k events takes 1.3 s; these take ~0.1 s). Times in µs. ``corr`` / ``linked``: kineto's
    correlation ids (a CUDA runtime call or kernel is linked to the op that issued it);
    ``launcher``: for a kernel or copy on the device, that op."""

    __slots__ = ("name", "start", "end", "thread", "cpu", "annotation", "parent", "children",
                 "self_us", "corr", "linked", "launcher")

    def __init__(self, name: str, start: float, end: float, thread: int = 0, cpu: bool = True,
                 annotation: bool = False, corr: int = 0, linked: int = 0) -> None:
        self.name = name
        self.start = start
        self.end = end
        self.thread = thread
        self.cpu = cpu
        self.annotation = annotation or _ours(name)
        self.parent: Ev | None = None
        self.children: list[Ev] = []
        self.self_us = end - start
        self.corr = corr
        self.linked = linked
        self.launcher: Ev | None = None

    @property
    def total_us(self) -> float:
        return self.end - self.start


@contextlib.contextmanager
def _no_gc():
    """Tens of thousands of linked events would wake the cyclic collector again and again, each
    time walking the whole heap (torch's too): 80 ms became 300-400 ms for a ViT window."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def unlink(evs: list[Ev]) -> None:
    """Break the parent / children cycles, so the events go with their last reference instead of
    waiting for a collection during some later step."""
    for e in evs:
        e.parent = e.launcher = None
        e.children = []


def _ours(name: str) -> bool:
    return name.startswith(("ProfilerStep", LABEL, FWD, BWD))


def light_events(prof) -> list[Ev]:
    """The events of a finished window, nested per thread (parent, children, self time)."""
    try:
        raw = prof.profiler.kineto_results.events()
    except AttributeError:  # no kineto results: torch's own (slower) parse
        return nest([Ev(e.name, e.time_range.start, e.time_range.end, e.thread,
                        getattr(e.device_type, "name", "CPU") == "CPU",
                        bool(getattr(e, "is_user_annotation", False))) for e in prof.events()])
    raw = [k for k in raw if not (k.is_async() or k.is_hidden_event()
                                  or k.start_thread_id() != k.end_thread_id())]
    # Nanoseconds since the epoch do not fit a float at ns precision: count from the first event
    # (as integers), or a child 0.25 µs long can seem to start after its parent ended.
    base = min((k.start_ns() for k in raw), default=0)
    out = []
    for k in raw:
        start = k.start_ns() - base
        out.append(Ev(k.name(), start / 1000.0, (start + k.duration_ns()) / 1000.0, k.start_thread_id(),
                      k.device_type().name == "CPU", k.is_user_annotation(), k.correlation_id(),
                      k.linked_correlation_id()))
    return nest(link(out))


def link(evs: list[Ev]) -> list[Ev]:
    """Tie CUDA runtime calls and device activity to the op that issued them (as torch does):
    a runtime call takes its op's thread (kineto records the OS thread id), so it nests under the
    op; a kernel or copy gets ``launcher``."""
    frontend = {e.corr: e for e in evs if e.cpu and not e.linked and e.corr}
    for e in evs:
        op = frontend.get(e.linked) if e.linked else None
        if op is None:
            continue
        if e.cpu:
            e.thread = op.thread
        else:
            e.launcher = op
    return evs


def nest(evs: list[Ev]) -> list[Ev]:
    """Set parent / children / self time of the CPU events, thread by thread, by containment."""
    by_thread: dict[int, list[Ev]] = defaultdict(list)
    for e in evs:
        if e.cpu:
            by_thread[e.thread].append(e)
    for thread_evs in by_thread.values():
        thread_evs.sort(key=lambda e: (e.start, -e.end))
        stack: list[Ev] = []
        for e in thread_evs:
            while stack and not (stack[-1].start <= e.start and e.end <= stack[-1].end):
                stack.pop()
            if stack:
                e.parent = stack[-1]
                stack[-1].children.append(e)
                stack[-1].self_us -= e.end - e.start
            stack.append(e)
    return evs


def _r(x: float | None, digits: int = 3) -> float | None:
    return None if x is None else round(x, digits)


def _ms(us: float, steps: int) -> float:
    return round(us / 1000.0 / steps, 4)


def analyse(evs: list[Ev], module_names: list[str] = (), backward: bool = False,
            steps: int | None = None) -> dict:
    """The pane's tables from the nested events of the active steps (see ``light_events``).

    Times are per step (means over the active steps); ``share`` is of the mean step. A window
    stopped early ends with the stub of a step that never ran: ``steps`` keeps the first ones.
    """
    steps = sorted((e for e in evs if e.cpu and e.name.startswith("ProfilerStep")),
                   key=lambda e: e.start)[:steps]
    n = max(1, len(steps))
    step_us = sum(e.total_us for e in steps)
    window_us = step_us or 1.0
    cpu = [e for e in evs if e.cpu]

    labels: dict[str, float] = defaultdict(float)
    fwd: dict[str, float] = defaultdict(float)
    bwd: dict[str, float] = defaultdict(float)
    spans = []  # (start, end, kind, name) of every tuimon label and module span
    ops: dict[str, list[float]] = {}
    for e in cpu:
        if e.annotation:
            for prefix, sums, kind in ((LABEL, labels, "label"), (FWD, fwd, "forward"),
                                       (BWD, bwd, "backward")):
                if e.name.startswith(prefix):
                    name = e.name[len(prefix):]
                    sums[name] += e.total_us
                    spans.append((e.start, e.end, kind, name))
                    break
            continue
        row = ops.setdefault(e.name, [0, 0.0, 0.0])
        row[0] += 1
        row[1] += e.self_us
        row[2] += e.total_us

    split = {f"{k}_ms": _ms(labels.get(k, 0.0), n) for k in SPLIT}
    split["step_ms"] = _ms(step_us, n)
    split["other_ms"] = round(max(0.0, split["step_ms"] - sum(split[f"{k}_ms"] for k in SPLIT)), 4)
    out = {"steps_recorded": len(steps), "step_ms": split["step_ms"], "split": split,
           "top_ops": _top(ops, n, window_us)}

    kernels: dict[str, list[float]] = {}
    by_op: dict[str, list[float]] = {}
    for e in evs:
        if not e.cpu and not e.annotation:  # kernels, copies (annotations have GPU mirrors)
            for table, name in ((kernels, e.name), (by_op, e.launcher.name if e.launcher else e.name)):
                row = table.setdefault(name, [0, 0.0, 0.0])
                row[0] += 1
                row[1] += e.total_us
                row[2] += e.total_us
    if kernels:  # on a GPU: device time by the op that launched it, and by kernel
        out["top_device_ops"] = _top(by_op, n, window_us)
        out["top_kernels"] = _top(kernels, n, window_us)
    out["modules"] = [{"name": m, "forward_ms": _ms(fwd[m], n) if m in fwd else None,
                       "backward_ms": _ms(bwd[m], n) if backward and m in bwd else None}
                      for m in module_names if m in fwd or m in bwd]
    out["syncs"] = find_syncs(cpu, spans, n)
    out["sync_count"] = round(sum(s["count"] for s in out["syncs"] if not s["ours"]), 2)
    return out


def _top(rows: dict[str, list[float]], n: int, window_us: float) -> list[dict]:
    ranked = sorted(rows.items(), key=lambda kv: kv[1][1], reverse=True)[:TOP_N]
    return [{"name": name, "calls": round(c / n, 2), "self_ms": _ms(s, n), "total_ms": _ms(t, n),
             "share": round(s / window_us, 4)} for name, (c, s, t) in ranked]


def _descendants(e: Ev):
    stack = list(e.children)
    while stack:
        c = stack.pop()
        yield c
        stack.extend(c.children)


def _ancestors(e: Ev):
    p = e.parent
    while p is not None:
        yield p
        p = p.parent


def _where(t: float, spans) -> tuple[str | None, str | None, str | None]:
    """(label, module span kind, module) around the time ``t``: the innermost of each. By time,
    not by thread: on a GPU backward runs on autograd's device thread, inside the main thread's
    ``tuimon: backward``."""
    label = module = kind = None
    best_label = best_module = float("inf")
    for start, end, what, name in spans:
        if start <= t <= end:
            dur = end - start
            if what == "label" and dur < best_label:
                label, best_label = name, dur
            elif what != "label" and dur < best_module:
                kind, module, best_module = what, name, dur
    return label, kind, module


def find_syncs(cpu_events: list[Ev], spans, n: int) -> list[dict]:
    """Host<->device syncs and scalar reads, grouped by (op, kind, where), counts per step.

    A scalar read is ``aten::item`` (or a ``_local_scalar_dense`` outside one); it is a
    ``device_sync`` when a CUDA synchronisation runs inside it, else a ``scalar_read`` (a CPU
    tensor: no device wait, but on a GPU the same line syncs when the tensor lives there). A CUDA
    synchronisation (or a synchronous cudaMemcpy) outside a scalar read is named after the op
    that issued it (``aten::copy_``, ``aten::nonzero`` ...); ``blocking_copy`` when that op
    copied too. ``context``: the outermost op around it that is not tuimon's (the backward node,
    e.g. ``GatherBackward0``, or ``Optimizer.step#AdamW.step``).
    """
    found: dict[tuple, list[float]] = {}

    def add(op: str, kind: str, e: Ev, via: str | None) -> None:
        label, span_kind, module = _where(e.start, spans)
        where = f"{span_kind} › {module}" if module else (label or "outside the step labels")
        outer = [a for a in _ancestors(e) if not _ours(a.name)]
        context = outer[-1].name.replace(ENGINE, "") if outer else None  # e.g. GatherBackward0
        row = found.setdefault((op, kind, where, label, module, via, context), [0, 0.0])
        row[0] += 1
        row[1] += e.total_us

    for e in cpu_events:
        name = e.name
        # An item() runs _local_scalar_dense inside it; one read, counted once. (Two events with
        # the very same start and end may nest either way round.)
        if name == "aten::item" or (name == "aten::_local_scalar_dense" and not any(
                a.name == "aten::item" for a in (*_ancestors(e), *_descendants(e)))):
            via = next((d.name for d in _descendants(e) if d.name in SYNC_CALLS), None)
            add(name, "device_sync" if via else "scalar_read", e, via)
        elif name in SYNC_CALLS:
            if any(a.name in SCALAR_READS for a in _ancestors(e)):
                continue  # counted with its scalar read
            op = e.parent if e.parent is not None and not _ours(e.parent.name) else e  # who called it
            copies = name == "cudaMemcpy" or any(c.name.startswith("cudaMemcpy") for c in op.children)
            add(op.name, "blocking_copy" if copies else "device_sync", op, name)

    out = [{"op": op, "kind": kind, "where": where, "phase": label, "module": module, "via": via,
            "context": context, "count": round(count / n, 2), "ms": _ms(total_us, n),
            "ours": label == LOSS_READ}
           for (op, kind, where, label, module, via, context), (count, total_us) in found.items()]
    out.sort(key=lambda s: (s["ours"], -s["count"]))
    return out
