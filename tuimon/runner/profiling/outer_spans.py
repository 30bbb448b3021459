"""A script's outermost module calls as spans while a capture records, so that the step's time
outside the trained module can be named for what ran there: a frozen loss network, a teacher, a
metric module (analysis/why/syncs.py reads them through outside.py's table).

While the profiler records a window's steps, a global forward pre-hook and forward hook open a
``module: NAME`` span around each module call made outside every other module call (a count of
nested calls, per thread). The trained module's own calls open ``module: NAME (trained)`` from
its forward wrapper (runner/script/phases.py), which runs even when the module was compiled in
place (no global hook sees that call); the modules it calls are inside it, not spans of their
own. Only on a variant that compiles nothing: with a compiled module a global module hook costs
compiles inside the window (Dynamo guards on them where it inlines ``_call_impl``, and compiles
a hook run under its frame callback as a frame of its own: both seen on a gcn-like script), so
there only the trained module's calls and the optimizer are spans, and the other modules' ops
count as ops outside any module. Once the window is over the hooks are removed and ``active``
is None: what is left on the hot path is the trained wrapper's one check of it.

``optimizer.step()`` gets a ``tuimon: optimizer`` label too, from tuimon's own optimizer hooks
(runner/script/hooks.py: ``stepping`` / ``stepped``), closed before the step ends there:
torch's ``Optimizer.step#...`` span holds that post-hook, so it straddles two recorded steps
(the last one's is left open, never written), and the optimizer's ops would seem to run outside
it. (Hooks of its own could not be added: a capture opens at a step boundary, inside torch's
loop over the optimizer hooks, which must not change under it.)
"""

from __future__ import annotations

import threading

from tuimon.runner.global_hooks import GlobalHook
from tuimon.runner.profiling.labels import LABEL, MODULE, TRAINED

active: OuterSpans | None = None  # the spans of the capture recording now


def module_name(module) -> str:
    """A module's class name; a torch.compile or DDP wrapper's: the module it wraps."""
    inner = getattr(module, "_orig_mod", None)
    if inner is None and type(module).__name__ == "DistributedDataParallel":
        inner = getattr(module, "module", None)
    return type(inner if inner is not None else module).__name__


class OuterSpans:
    def __init__(self, modules: bool = True) -> None:
        import torch

        self.modules = modules  # the global module hooks (not on a compiled variant)
        self._enter = torch.ops.profiler._record_function_enter_new
        self._exit = torch.ops.profiler._record_function_exit._RecordFunction
        self._compiling = torch.compiler.is_compiling
        self._local = threading.local()  # depth: module calls open; span: the outermost's
        self._handles: list = []  # global hooks: they fire for a torch.compile wrapper and the
        # module it wraps, and the depth count keeps the inner call out of the spans

    def install(self) -> None:
        global active
        if self.modules:
            self._handles = [GlobalHook(self._pre), GlobalHook(self._post, after=True)]
        active = self

    def remove(self) -> None:
        global active
        for h in self._handles:
            h.remove()
        self._handles = []
        if active is self:
            active = None

    def _open(self, label: str):
        local = self._local
        depth = getattr(local, "depth", 0)
        local.depth = depth + 1
        return self._enter(label, None) if depth == 0 else None

    def close(self, span) -> None:
        local = self._local
        local.depth = max(0, getattr(local, "depth", 1) - 1)
        if span is not None:
            self._exit(span)

    def trained(self, name: str):
        """The trained module's call begins (its wrapper): its span, or None inside another."""
        return self._open(MODULE + name + TRAINED)

    def _pre(self, module, args):
        if self._compiling():
            return None
        local = self._local
        stack = getattr(local, "stack", None)
        if stack is None:
            stack = local.stack = []
        stack.append(self._open(MODULE + module_name(module)))
        return None

    def _post(self, module, args, output):
        if self._compiling():
            return None
        stack = getattr(self._local, "stack", None)
        if stack:  # (a call begun before the hooks were on has none)
            self.close(stack.pop())
        return None

    def stepping(self) -> None:
        """``optimizer.step()`` begins (tuimon's pre-hook): its label opens."""
        local = self._local
        steps = getattr(local, "steps", None)
        if steps is None:
            steps = local.steps = []
        steps.append(self._enter(LABEL + "optimizer", None))

    def stepped(self) -> None:
        """``optimizer.step()`` is done (tuimon's post-hook, before the step's end)."""
        steps = getattr(self._local, "steps", None)
        if steps:  # (a step begun before the hooks were on has none)
            self._exit(steps.pop())
