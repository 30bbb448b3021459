"""``tuimon try``'s fixes in a script run (runner/fixes.py), applied through the hooks before the
script runs and with no edit to its files: the config flags (scalars, tf32) and constructor
defaults (foreach, loader: runner/fix_defaults.py) at once; the compile arguments (dynamic, a
mode fix, regional) wherever the script or tuimon's auto-compile compiles (compile_modes.py);
``opt`` as a MODE+opt variant's; ``amp`` around the trained module's call, outside every compiled
frame, where the forward timer holds it (phases.py). What came of each is said as the run's
notes; at the run's end each fix nothing was said of is said not applied (``settle``)."""

from __future__ import annotations

import torch

from tuimon import fixes as registry
from tuimon.runner.fixes import Fixes, autocast_call

# Why a fix did nothing in a script, when nothing it applies to was seen by the end.
UNSEEN = {
    "regional": "nothing was compiled",
    "dynamic": "nothing was compiled",
    "no-cudagraphs": "nothing was compiled",
    "reduce-overhead": "nothing was compiled",
    "max-autotune": "nothing was compiled",
    "opt": "no torch.optim optimizer was made",
    "foreach": "no torch.optim optimizer that takes foreach was made",
    "loader": "no DataLoader was made",
    "amp": "no module called holds all the parameters the optimizer trains",
}


def start(s, say) -> Fixes:
    """The run's fixes (``s``: its settings), flags and constructor defaults applied now, before
    the script's first line; ``say(text, **fields)``: a run note."""
    names = registry.asked(s.fixes, s.axes, s.knobs)
    # A script picks its device later: CUDA where torch sees it (not asked without a fix).
    fx = Fixes(names, say, mode=s.mode, precision=s.precision,
               on_cuda=bool(names) and torch.cuda.is_available(), is_script=True)
    fx.flags()
    fx.constructors()
    return fx


def amp(fx: Fixes):
    """What the forward timer wraps the trained module's call with (``wrap(call, module)``), or
    None without the fix ``amp``: autocast to bf16 on the module's device, outputs to fp32."""
    if not fx.on("amp"):
        return None

    def wrap(call, module):
        device = next((p.device for p in module.parameters()), torch.device("cpu"))
        name = type(module).__name__
        if device.type == "cuda" and not torch.cuda.is_bf16_supported():
            fx.tell("amp", False, f"{name} is on a GPU without bf16")
            return call
        fx.tell("amp", True, f"autocast to bfloat16 around {name}'s calls (its floating "
                "outputs back to fp32)")
        return autocast_call(call, device.type, torch.bfloat16)

    return wrap


def settle(fx: Fixes | None) -> None:
    if fx is not None:
        fx.settle(UNSEEN)
