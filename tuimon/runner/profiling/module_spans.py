"""Which modules get ``forward: NAME`` / ``backward: NAME`` spans, and the hooks that open and
close them while a capture records (see the package's docstring for why blocks, not leaves)."""

from __future__ import annotations

import contextlib
import warnings
from collections import defaultdict

from tuimon.runner.profiling.labels import BWD, FWD


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
