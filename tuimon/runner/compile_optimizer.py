"""A variant's ``+opt``: the optimizer's step compiled too (``default+opt``), the usual remedy for
an optimizer-bound step, raced like any other variant (tuimon/variants.py).

torch.compile leaves ``optimizer.step()`` alone unless asked; compiling it fuses the per-parameter
update loop into a few kernels (PyTorch's "compiling the optimizer" recipe). Only the step's body
is compiled: torch's wrapper that runs the optimizer-step hooks stays outside, so tuimon's own
hooks (a script's step boundary, runner/script/hooks.py) never land inside a compiled frame. The
step is compiled with the default mode whatever the model's mode (CUDA graphs over an optimizer's
state, as reduce-overhead would, need a tensor learning rate), and a learning rate that changes
every step (a scheduler) recompiles it each time unless it is a tensor: the Why pane then names
the recompiles.
"""

from __future__ import annotations

import types


def compile_step(torch, optimizer, compile=None) -> bool:  # noqa: A002 - torch.compile's stand-in
    """Replace ``optimizer.step`` (this instance's) by a compiled one; False when this optimizer's
    step is not torch's hooked step (a class that defines its own way in): left as it is.
    ``compile``: torch.compile itself where a script's is patched (script/compile_modes.py)."""
    hooked = getattr(type(optimizer), "step", None)
    inner = getattr(hooked, "__wrapped__", None)
    if inner is None or not getattr(hooked, "hooked", False):
        return False
    # torch's optimizers wrap their step in _use_grad_for_differentiable, which sets the grad mode
    # between two deliberate graph breaks (so that AOT sees an update without grad): the grad
    # mode is set here instead, outside the compiled frame, and the step compiles whole.
    body = getattr(inner, "__wrapped__", inner)
    compiled = (compile or torch.compile)(body, mode="default")

    def step_body(self, *args, **kwargs):
        if body is inner:
            return compiled(self, *args, **kwargs)
        with torch.set_grad_enabled(self.defaults.get("differentiable", False)):
            return compiled(self, *args, **kwargs)

    # profile_hook_step: the hooks and the profiler's label around the compiled body.
    step = torch.optim.Optimizer.profile_hook_step(step_body)
    optimizer.step = types.MethodType(step, optimizer)
    return True
