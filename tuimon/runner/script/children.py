"""Training in child processes: a script whose steps run in processes it starts (pytorch/examples'
mnist_hogwild: ``torch.multiprocessing`` workers that train one shared model; a
``torch.multiprocessing.spawn`` launcher; ``multiprocessing.Process``).

tuimon hooks the script's own process only: a child started with ``spawn`` or ``forkserver``
is a new interpreter without tuimon's settings (sitecustomize removed them from the
environment), and one started with ``fork`` drops the hooks it inherited (``forked``). Hooking the
children instead is not sound: tuimon's run is one process with one event and control pipe, and
a step is its lead optimizer's step; N children stepping one shared model at once (Hogwild) are
no such run, and their steps cannot be paused, stopped or timed at a boundary of the script's.
So tuimon says what happened, in one line, instead of misreading a parent that never steps
("within its warm-up", "still starting"):

- ``Children.install`` wraps ``multiprocessing``'s ``BaseProcess.start`` (``mp.Process``,
  ``torch.multiprocessing``'s, ``spawn``'s, a ``Pool``'s workers): a child started for anything
  but torch's own workers (a DataLoader's) runs its target through ``run_child`` (a module
  function, so it pickles for ``spawn`` and ``forkserver`` too), which counts the child's
  optimizer steps and ``backward()`` calls and writes them to a small file the script's
  process reads. The target and its arguments are the script's own; the wrapper is taken off
  the ``Process`` object once it started.
- The first such child, started before the script's first step, is said at once (a note
  flagged ``children``: the supervisor stops calling a run that never takes its first turn
  "still starting", control/handover.py).
- At the script's exit, when its own process never stepped while children ran, the run's answer
  is one line, flagged ``untimed`` (the verdict then says it, analysis/stats/verdict.py): its
  training ran in child processes tuimon does not hook, so nothing was measured; with the
  children's own count of steps when they wrote one. When the script stepped too, a note says
  what its children trained beside.

A process the script forks with ``os.fork()`` itself, or starts with ``subprocess``, is not
seen here.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import sys
import threading
import time

WRITE_S = 2.0  # a child rewrites its count at most this often (and at its end)
SKIPPED = ("torch.utils.data", "torch._inductor", "torch._dynamo", "torch.distributed")


def report_dir(settings) -> str:
    """Where the children write their counts: beside the session's profiles (tuimon's own
    directory, which a variant's file routing leaves alone), one directory a run."""
    if settings.profile.profile_dir:
        return os.path.join(os.path.dirname(settings.profile.profile_dir), "children", settings.run)
    import tempfile

    return tempfile.mkdtemp(prefix="tuimon-children-")


def forked(run, emitter, control, sock, fds: tuple) -> None:
    """In a child forked from the script's process (a DataLoader worker, a child started with the
    fork method; os.register_at_fork): not the run. Its inherited hooks go quiet and the run's
    pipes (or a rank's socket) are closed there, so only the script's process speaks for it."""
    run.enabled = False
    emitter.fd = None
    control.fd = control.sock = None
    fds = (sock.detach(),) if sock is not None else fds  # the run's pipes: (event fd, control fd)
    for fd in fds:
        if fd is not None:
            with contextlib.suppress(OSError):
                os.close(fd)


def run_child(target, report: str, *args, **kwargs):
    """A child's target, with its optimizer steps and backward() calls counted into ``report``
    (``<dir>/<pid>.json``). Whatever the counting does, the target runs as it would."""
    count = None
    with contextlib.suppress(Exception):
        count = _Count(report)
        count.install()
    try:
        return target(*args, **kwargs)
    finally:
        if count is not None:
            with contextlib.suppress(Exception):
                count.write(done=True)


class _Count:
    """In a child: torch's global optimizer-step hook and ``torch.autograd.backward``, counted."""

    def __init__(self, report: str) -> None:
        self.path = os.path.join(report, f"{os.getpid()}.json")
        self.steps = self.backward = 0
        self.first: float | None = None
        self.last: float | None = None
        self._written = 0.0

    def install(self) -> None:
        if "torch" not in sys.modules:  # a child that trains has torch by now (its arguments)
            return
        import torch
        from torch.optim.optimizer import register_optimizer_step_post_hook

        register_optimizer_step_post_hook(self._stepped)
        original = torch.autograd.backward

        @functools.wraps(original)
        def backward(*args, **kwargs):
            self.backward += 1
            return original(*args, **kwargs)

        torch.autograd.backward = backward

    def _stepped(self, optimizer, args, kwargs) -> None:
        now = time.monotonic()
        self.steps += 1
        self.first = self.first or now
        self.last = now
        if self.steps == 1 or now - self._written >= WRITE_S:
            self.write()

    def write(self, done: bool = False) -> None:
        self._written = time.monotonic()
        first, last = self.first, self.last
        data = {"pid": os.getpid(), "steps": self.steps, "backward": self.backward, "done": done,
                "seconds": round(last - first, 3) if first is not None and last is not None else None}
        tmp = f"{self.path}.tmp"
        with open(tmp, "w") as f:
            json.dump(data, f)
        os.replace(tmp, self.path)


def target_name(target, args: tuple) -> str:
    """'train() in train.py'; torch.multiprocessing.spawn's wrapper: the function it runs."""
    if getattr(target, "__module__", "") == "torch.multiprocessing.spawn" and args and callable(args[0]):
        target = args[0]
    name = getattr(target, "__qualname__", None) or getattr(target, "__name__", None) or type(target).__name__
    module = getattr(target, "__module__", None) or ""
    where = sys.modules.get(module)
    path = getattr(where, "__file__", None)
    return f"{name}() in {os.path.basename(path) if path else module or '?'}"


def skipped(target) -> bool:
    """torch's own workers (a DataLoader's, Inductor's): none of the script's training."""
    module = getattr(target, "__module__", "") or ""
    return module.startswith(SKIPPED) or target is None


class Children:
    """In the script's process: the children it starts, and what they trained (their reports)."""

    def __init__(self, run, emitter, report_dir: str) -> None:
        self.run, self.emitter, self.dir = run, emitter, report_dir
        self.started: list[dict] = []  # {pid, name, method}
        self.steps_at_start: int | None = None  # the script's own steps when the first started
        self._pid = os.getpid()
        self._lock = threading.Lock()

    def install(self) -> Children:
        import atexit
        import multiprocessing.process as process

        original = process.BaseProcess.start
        children = self

        def start(self):
            target = getattr(self, "_target", None)
            if os.getpid() != children._pid or skipped(target):
                return original(self)
            name = target_name(target, tuple(getattr(self, "_args", ()) or ()))
            with contextlib.suppress(OSError):
                os.makedirs(children.dir, exist_ok=True)
            self._target = functools.partial(run_child, target, children.dir)
            try:
                return original(self)
            finally:
                self._target = target
                children.said_started(self, name)

        process.BaseProcess.start = start  # type: ignore[method-assign]  # the hook, on purpose
        atexit.register(self.at_exit)  # after run.finished's registration: runs before it
        return self

    def said_started(self, process, name: str) -> None:
        from tuimon import events

        method = getattr(getattr(process, "_popen", None), "method", None) or "fork"
        with self._lock:
            self.started.append({"pid": process.pid, "name": name, "method": method})
            first = len(self.started) == 1
            if first:
                self.steps_at_start = self.run.boundaries
        if first and self.run.enabled and not self.steps_at_start:  # (a helper beside steps: no news)
            self.emitter.emit_now(events.WARNING, note=True, children=True, text=(
                f"the script started a child process ({self._what()}): tuimon hooks only the "
                "script's own process, so what a child trains is not measured"))

    def _what(self) -> str:
        names = list(dict.fromkeys(c["name"] for c in self.started))
        methods = "/".join(dict.fromkeys(c["method"] for c in self.started))
        return f"{', '.join(names[:3])}, started with multiprocessing {methods}"

    def no_step_text(self, seconds: float) -> str | None:
        """The no-step watch's line when children run (hooks.py): where the steps may be."""
        if not self.started:
            return None
        n = len(self.started)
        return (f"no optimizer step in {seconds:g} s in the script's own process; it started {n} child "
                f"process{'es' if n != 1 else ''} ({self._what()}), which tuimon does not hook: if "
                "they train, their steps are not measured")

    def reports(self) -> list[dict]:
        out = []
        for c in self.started:
            with contextlib.suppress(OSError, ValueError), open(
                    os.path.join(self.dir, f"{c['pid']}.json")) as f:
                out.append(json.load(f))
        return out

    def answer(self) -> tuple[str, dict] | None:
        """The line the run ends with, and its fields: None when no child was started."""
        if not self.started:
            return None
        reports = self.reports()
        steps = sum(r.get("steps") or 0 for r in reports)
        n = len(self.started)
        what = f"{n} child process{'es' if n != 1 else ''} ({self._what()})"
        counted = (f"they made {steps:,} optimizer step{'s' if steps != 1 else ''} "
                   f"({sum(r.get('backward') or 0 for r in reports):,} backward() calls)"
                   if reports and steps else None)
        fields = {"children": n, "child_steps": steps if reports else None}
        if self.run.boundaries == 0:  # the script's own process never stepped
            if counted:
                text = (f"the script's training ran in {what}, which tuimon does not hook: {counted}, "
                        "none of them measured, and no variant's compile mode reached them; nothing can "
                        "be measured here (tuimon measures a training loop in the script's own process, "
                        "or torchrun's ranks)")
            else:
                text = (f"the script never stepped an optimizer in its own process and started {what}; "
                        "if they trained, tuimon does not hook them: nothing can be measured here "
                        "(tuimon measures a training loop in the script's own process, or "
                        "torchrun's ranks)")
            return text, {**fields, "untimed": "children"}
        if counted:
            return (f"beside the script's own steps, {what} trained too: {counted}, not measured", fields)
        return None

    def at_exit(self) -> None:
        if os.getpid() != self._pid or not self.started or self.run.failed:
            return
        from tuimon import events

        with contextlib.suppress(Exception):
            said = self.answer()
            if said is not None:
                text, fields = said
                self.emitter.emit_now(events.WARNING, text=text, **fields)
        with contextlib.suppress(OSError):
            for name in os.listdir(self.dir):
                os.remove(os.path.join(self.dir, name))
            os.rmdir(self.dir)
            os.rmdir(os.path.dirname(self.dir))  # the session's children/, once the last run's is gone
