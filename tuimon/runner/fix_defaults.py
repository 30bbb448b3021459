"""Two of ``tuimon try``'s fixes (runner/fixes.py) as constructor defaults, patched in this child
process before the recipe's ``build`` or the script runs: what the user did not pass is given,
what they passed is left alone. Nothing is restored: the process is the run's own.

- ``foreach``: torch.optim's optimizers made with ``foreach=True`` (one multi-tensor kernel per
  parameter group), or ``fused=True`` where the class takes it and the parameters are on a GPU;
  only where the caller passed neither (nor ``differentiable=True``, which takes neither).
- ``loader``: a DataLoader made with ``num_workers=0`` gets workers sized to the cores this
  process may run on, ``persistent_workers=True`` and, where CUDA is there, ``pin_memory=True``.
  An IterableDataset is left alone: each worker would yield it whole unless it splits itself.

Each patched constructor tells ``tell(applied, text)`` what it did; a subclass's ``__init__``
calling its base's (AdamW's Adam, a DataLoader subclass) is decided once, by the outermost.
"""

from __future__ import annotations

import functools
import inspect
import threading

import torch

from tuimon import cores

MAX_WORKERS = 8  # past this a loader's workers mostly compete with the training for the cores
_inside = threading.local()  # a patched __init__ under way in this thread (its bases' wait)


def workers() -> int:
    """Workers sized to the cores this process may use: all of them up to MAX_WORKERS."""
    return max(1, min(cores.usable(), MAX_WORKERS))


def _patch(cls, decide) -> None:
    """``cls.__init__`` with its arguments bound and handed to ``decide(self, arguments)`` first
    (which may change them), only in the outermost patched ``__init__`` of a call."""
    original = cls.__init__
    signature = inspect.signature(original)

    @functools.wraps(original)
    def init(self, *args, **kwargs):
        if getattr(_inside, "now", False):
            return original(self, *args, **kwargs)
        _inside.now = True
        try:
            try:
                bound = signature.bind(self, *args, **kwargs)
            except TypeError:  # the caller's own mistake: torch says it, as without tuimon
                return original(self, *args, **kwargs)
            decide(self, bound.arguments)
            return original(*bound.args, **bound.kwargs)
        finally:
            _inside.now = False

    cls.__init__ = init


# ---- foreach / fused ---------------------------------------------------------------------------
def optimizer_defaults(tell) -> list[str]:
    """Every torch.optim optimizer class whose ``__init__`` takes ``foreach`` patched; their
    names."""
    patched = []
    for name in sorted(dir(torch.optim)):
        cls = getattr(torch.optim, name)
        if not (isinstance(cls, type) and issubclass(cls, torch.optim.Optimizer)
                and "__init__" in cls.__dict__):
            continue
        params = inspect.signature(cls.__init__).parameters
        if "foreach" not in params:
            continue
        _patch(cls, functools.partial(_optimizer_args, fused_ok="fused" in params, tell=tell))
        patched.append(name)
    return patched


def _optimizer_args(optimizer, arguments: dict, *, fused_ok: bool, tell) -> None:
    kind = type(optimizer).__name__
    given = [k for k in ("foreach", "fused") if arguments.get(k) is not None]
    if given:
        tell(False, f"{kind} given {' and '.join(given)} by the code: left as it is")
        return
    if arguments.get("differentiable"):
        tell(False, f"{kind}(differentiable=True) takes neither foreach nor fused")
        return
    params = arguments.get("params")
    if params is not None and not isinstance(params, torch.Tensor):
        params = arguments["params"] = list(params)  # a generator, read once here and once there
    if fused_ok and _on_gpu(params):
        arguments["fused"] = True
        tell(True, f"{kind} made with fused=True")
    else:
        arguments["foreach"] = True
        tell(True, f"{kind} made with foreach=True")


def _on_gpu(params) -> bool:
    """Are the parameters on a CUDA device (fused's own kernels)? A list of tensors, of
    (name, tensor) pairs or of groups."""
    for item in params or ():
        if isinstance(item, dict):
            return _on_gpu(list(item.get("params", ())))
        tensor = item[1] if isinstance(item, tuple) else item
        if isinstance(tensor, torch.Tensor):
            return tensor.is_cuda
    return False


# ---- DataLoader workers ------------------------------------------------------------------------
def loader_defaults(tell, *, pin: bool) -> int:
    """DataLoader's ``__init__`` patched (``pin``: pin_memory too, where CUDA is there); the
    workers it gives."""
    n = workers()
    _patch(torch.utils.data.DataLoader, functools.partial(_loader_args, n=n, pin=pin, tell=tell))
    return n


def _loader_args(loader, arguments: dict, *, n: int, pin: bool, tell) -> None:
    dataset = arguments.get("dataset")
    if arguments.get("num_workers", 0):
        tell(False, f"a DataLoader given num_workers={arguments['num_workers']} by the code: "
             "left as it is")
        return
    if isinstance(dataset, torch.utils.data.IterableDataset):
        tell(False, f"a DataLoader over an IterableDataset ({type(dataset).__name__}) left with "
             "no workers: each worker would yield it whole")
        return
    arguments["num_workers"] = n
    if "persistent_workers" not in arguments:
        arguments["persistent_workers"] = True
    said = f"num_workers={n}, persistent_workers={arguments['persistent_workers']}"
    if pin and "pin_memory" not in arguments:
        arguments["pin_memory"] = True
        said += ", pin_memory=True"
    tell(True, f"a DataLoader over {type(dataset).__name__} made with {said} "
         f"({n} of the cores this process may use)")
