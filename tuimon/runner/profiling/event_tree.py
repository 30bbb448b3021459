"""A finished window's profiler events as light objects nested per thread: kineto's raw events
read directly, because torch's FunctionEvent list is ~10x slower to build."""

from __future__ import annotations

import contextlib
import gc
from collections import defaultdict

from tuimon.runner.profiling.labels import ours


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
        self.annotation = annotation or ours(name)
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
def no_gc():
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


def light_events(prof) -> list[Ev]:
    """The events of a finished window, nested per thread (parent, children, self time)."""
    return read_window(prof)[0]


def read_window(prof) -> tuple[list[Ev], list[str] | None]:
    """``light_events``, and the names of the spans the window left open (``spans_left_open``;
    None where torch gives no kineto events to tell)."""
    try:
        raw = prof.profiler.kineto_results.events()
    except AttributeError:  # no kineto results: torch's own (slower) parse
        return nest([Ev(e.name, e.time_range.start, e.time_range.end, e.thread,
                        getattr(e.device_type, "name", "CPU") == "CPU",
                        bool(getattr(e, "is_user_annotation", False))) for e in prof.events()]), None
    # torch 2.4's kineto events have no is_hidden_event() nor is_user_annotation(): none is
    hidden = _method(raw, "is_hidden_event")
    annotation = _method(raw, "is_user_annotation")
    left_open = spans_left_open(raw)
    raw = [k for k in raw if not (k.is_async() or hidden(k)
                                  or k.start_thread_id() != k.end_thread_id())]
    # Nanoseconds since the epoch do not fit a float at ns precision: count from the first event
    # (as integers), or a child 0.25 µs long can seem to start after its parent ended.
    base = min((k.start_ns() for k in raw), default=0)
    out = []
    for k in raw:
        start = k.start_ns() - base
        out.append(Ev(k.name(), start / 1000.0, (start + k.duration_ns()) / 1000.0, k.start_thread_id(),
                      k.device_type().name == "CPU", annotation(k), k.correlation_id(),
                      k.linked_correlation_id()))
    return nest(link(out)), left_open


def spans_left_open(raw: list) -> list[str]:
    """Names of the CPU spans that began while the profiler recorded and had not ended when it
    stopped: torch never wrote their end, so their end thread is 0. Each still holds a pointer
    into the stopped session's event queue, freed with it, and torch writes its end there when it
    ends with another session recording on that thread (docs/profiler.md: the crash under
    capture). A script's window stops at a boundary inside optimizer.step(), so the span of its
    last step, ``Optimizer.step#...``, is open; anything else is a span that outlives the step."""
    return [k.name() for k in raw  # the rare case first: one call an event
            if k.end_thread_id() == 0 and k.start_thread_id() != 0 and not k.is_async()
            and k.device_type().name == "CPU"]


def _method(raw: list, name: str):
    """Call ``name()`` on an event, or say False where this torch's events have no such method."""
    if raw and not hasattr(raw[0], name):
        return lambda k: False
    return lambda k: getattr(k, name)()


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
