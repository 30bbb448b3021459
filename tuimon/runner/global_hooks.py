"""tuimon's global module hooks, and torch's warning about them kept out of the user's log.

While any global module hook exists, every call of a ``torch.compile`` wrapper warns ("Using
`torch.compile(module)` when there are global hooks ..."): the hook fires for the wrapper and
for the module it wraps. tuimon's hooks (finding the trained module, a capture's spans) are built
for that, and a warning the user's script did not cause must not reach its log. So while one of
ours is armed the warning is filtered, and the filter goes with the last of them.

A hook called under a compiled module's frame callback (``Module.compile``'s ``_call_impl``: a
frame of torch's that Dynamo runs without tracing, calling the hooks) would be compiled as a
frame of its own: its ``torch.compiler.is_compiling()`` check then read True, and it did nothing
(the trained module never found), compiled for nothing. Its code is marked to run as it is
there, and every frame it calls too; inlined from a traced frame it is still a no-op.
"""

from __future__ import annotations

import contextlib
import re
import warnings
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from torch.utils.hooks import RemovableHandle

_WARNING = re.escape("Using `torch.compile(module)` when there are global hooks")
_filter: Any = None  # the warnings filter while any hook of ours is armed
_armed = 0


class GlobalHook:
    """One global forward (pre-)hook of tuimon's; ``remove()`` is idempotent."""

    def __init__(self, fn, *, after: bool = False) -> None:
        global _filter, _armed
        import torch

        hooks = torch.nn.modules.module
        _never_traced(fn)
        self._handle: RemovableHandle | None = (
            hooks.register_module_forward_hook(fn, always_call=True) if after
            else hooks.register_module_forward_pre_hook(fn))
        if _armed == 0:
            warnings.filterwarnings("ignore", message=_WARNING)
            _filter = warnings.filters[0]
        _armed += 1

    def remove(self) -> None:
        global _filter, _armed
        if self._handle is None:
            return
        self._handle.remove()
        self._handle = None
        _armed -= 1
        if _armed == 0 and _filter is not None:
            with contextlib.suppress(ValueError):  # the script reset its filters meanwhile
                warnings.filters.remove(_filter)  # type: ignore[attr-defined]  # a list, typeshed says Sequence
            getattr(warnings, "_filters_mutated", lambda: None)()  # as warnings.filterwarnings does
            _filter = None


def _never_traced(fn) -> None:
    """Dynamo runs ``fn``'s frame, and the frames it calls, untraced when it meets it as a frame
    (torch 2.6 and later; older ones: that frame alone)."""
    code = getattr(getattr(fn, "__func__", fn), "__code__", None)
    if code is None:
        return
    try:
        from torch._dynamo.eval_frame import set_code_exec_strategy
        from torch._dynamo.types import FrameAction, FrameExecStrategy

        set_code_exec_strategy(code, FrameExecStrategy(FrameAction.SKIP, FrameAction.SKIP))
    except (ImportError, AttributeError):
        with contextlib.suppress(ImportError, AttributeError):
            from torch._dynamo.eval_frame import skip_code

            skip_code(code)
