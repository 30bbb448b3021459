"""``tuimon try``'s fixes (tuimon/fixes.py) applied in the child, from outside: no edit to the
user's files or environment, only this process's torch (config flags, compile arguments,
constructor defaults: runner/fix_defaults.py). A recipe's runner (runner/__main__.py) and a
script's hooks (runner/script/fixes.py) both apply the names their settings carry, through
``Fixes``.

What came of each fix is said as a run note (a ``warning`` with ``note: true``) that also carries
``fix`` (its name) and ``applied`` (true / false): once per text, so a fix may be said more than
once (two DataLoaders); one that nothing was said of by the run's end is said not applied, with
why (``settle``). A fix that cannot apply at all (CUDA only, a compiled variant's only, already
the variant's own) is said so at the start and changes nothing: the run trains as its variant
would without it.
"""

from __future__ import annotations

import functools
import os
from collections import Counter

import torch

from tuimon import fixes as registry

CONTAINERS = (torch.nn.ModuleList, torch.nn.Sequential, torch.nn.ModuleDict)
TORCH_DIR = os.path.dirname(os.path.abspath(torch.__file__)) + os.sep


class Fixes:
    """The fixes one run was asked for (``names``), the variant they make (``mode``,
    ``precision``: tuimon/fixes.py's ``variant_under``), and what became of each."""

    def __init__(self, names, say, *, mode: str, precision: str, on_cuda: bool,
                 is_script: bool) -> None:
        self.names = tuple(names)
        self.say = say  # say(text, **fields): one run note
        self.on_cuda = on_cuda
        self.mode, self.precision = registry.variant_under(
            mode, precision, self.names, on_cuda=on_cuda, is_script=is_script)
        self.settled: dict[str, bool] = {}
        self._active: set[str] = set()
        compiled = mode.removesuffix(registry.OPT) != "eager"
        for name in self.names:
            fix = registry.FIXES[name]
            why = registry.cannot(fix, on_cuda=on_cuda, is_script=is_script, compiled=compiled)
            if why is None:
                why = _already(fix, mode, precision)
            if why is not None:
                self.tell(name, False, why)
            else:
                self._active.add(name)

    def on(self, name: str) -> bool:
        """Asked, and not ruled out before the run."""
        return name in self._active

    def tell(self, name: str, applied: bool, text: str) -> None:
        self.settled[name] = self.settled.get(name, False) or applied
        self.say(f"fix {name}: {text}", fix=name, applied=applied)

    def settle(self, why: dict[str, str]) -> None:
        """The run ends: each fix nothing was said of is said not applied (``why`` by name)."""
        for name in self.names:
            if name in self._active and name not in self.settled:
                self.tell(name, False, why.get(name, "nothing it applies to was seen"))

    # ---- what several fixes change at once ---------------------------------------------------
    def compile_kwargs(self, kwargs: dict) -> dict:
        """A compile's arguments (the variant's mode in them) as the fixes change them: dynamic;
        the fixes that change every compile said applied, once."""
        for name in self.names:
            fix = registry.FIXES[name]
            if fix.mode and self.on(name) and name not in self.settled:
                self.tell(name, True, f"compiled with mode={fix.mode!r}")
        if self.on("dynamic"):
            if "dynamic" not in self.settled:
                self.tell("dynamic", True, "compiled with dynamic=True, duck sizing off")
            return {**kwargs, "dynamic": True}
        return kwargs

    def flags(self) -> None:
        """The config flags, set before anything compiles: scalars, tf32, and dynamic's duck
        sizing off (equal sizes share one symbol: a batch of 8 beside 8 features would be
        specialized to 8 with the features, and a batch of 12 recompile under dynamic=True)."""
        if self.on("dynamic"):
            import torch.fx.experimental._config as shapes

            shapes.use_duck_shape = False
        if self.on("scalars"):
            torch._dynamo.config.capture_scalar_outputs = True
            torch._dynamo.config.capture_dynamic_output_shape_ops = True
            self.tell("scalars", True, "torch._dynamo.config.capture_scalar_outputs and "
                      "capture_dynamic_output_shape_ops set before any compile")
        if self.on("tf32"):
            torch.backends.cuda.matmul.allow_tf32 = True
            torch.backends.cudnn.allow_tf32 = True
            self.tell("tf32", True, "TF32 matmuls and convolutions allowed "
                      "(torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)")

    def constructors(self) -> None:
        """The constructor defaults (runner/fix_defaults.py), before the optimizer and the
        DataLoaders are made: foreach, loader."""
        from tuimon.runner import fix_defaults

        if self.on("foreach"):
            fix_defaults.optimizer_defaults(functools.partial(self.tell, "foreach"))
        if self.on("loader"):
            fix_defaults.loader_defaults(functools.partial(self.tell, "loader"), pin=self.on_cuda)

    def compile_model(self, model, compile_fn, kwargs: dict, what: str = "the model",
                      whole=None):
        """``model`` compiled as the fixes say: its repeated blocks one by one (``regional``:
        ``compile_fn``, torch.compile's signature), else whole by ``whole`` (default
        ``compile_fn``); ``kwargs`` already the fixes' (``compile_kwargs``). What to call."""
        if self.on("regional") and isinstance(model, torch.nn.Module):
            cls, blocks = repeated_blocks(model)
            if blocks and cls is not None:
                compile_regions(blocks, compile_fn, kwargs)
                self.tell("regional", True, f"compiled {len(blocks)} blocks of {cls.__name__} one "
                          f"by one, not {what} whole")
                return model
            self.tell("regional", False, f"no repeated block in {type(model).__name__}: "
                      f"{what} compiled whole")
        elif self.on("regional"):
            self.tell("regional", False, f"{what} is not a module: compiled as it is")
        return (whole or compile_fn)(model, **kwargs)


def _already(fix, mode: str, precision: str) -> str | None:
    """Why a fix changes nothing on this variant: it is the variant's own already."""
    if fix.mode and mode.removesuffix(registry.OPT) == fix.mode:
        return f"the variant's mode is {fix.mode} already"
    if fix.name == "opt" and mode.endswith(registry.OPT):
        return "the variant compiles its optimizer's step already"
    if fix.precision and precision == fix.precision:
        return f"the variant's precision is {fix.precision} already"
    return None


# ---- regional compilation ----------------------------------------------------------------------
def repeated_blocks(model) -> tuple[type | None, list]:
    """The repeated block of ``model`` and its instances, as regional compilation takes them: a
    class with submodules of its own that occurs at least twice among the children of one
    ModuleList, Sequential or ModuleDict (a transformer's layers, a ResNet stage's blocks);
    of several, the one whose outermost instances hold the most parameters (a stage holding
    blocks wins over its blocks: the outermost repeat), then the shallowest. Its instances are
    every one in the model not inside another (the model itself never). (None, []) when no
    class repeats."""
    candidates: set[type] = set()
    for module in model.modules():
        if isinstance(module, CONTAINERS):
            counts = Counter(type(c) for c in module.children() if _composite(c))
            candidates.update(cls for cls, n in counts.items() if n >= 2)
    candidates -= {torch.nn.ModuleList, torch.nn.ModuleDict}  # no forward of their own
    best, best_key, best_blocks = None, None, []
    for cls in candidates:
        blocks, depth = _outermost(model, cls)
        if not blocks:
            continue
        params = sum(p.numel() for b in blocks for p in b.parameters())
        key = (params, -depth, len(blocks))
        if best_key is None or key > best_key:
            best, best_key, best_blocks = cls, key, blocks
    return best, best_blocks


def repeated_note(model) -> tuple[str, dict]:
    """A compiled run's note on its model's repeated block, whether or not it tries regional:
    what ``tuimon try`` needs to know before it suggests regional (analysis/tried.py). Text
    and its ``repeated`` field: {model, block (None: none), count}."""
    cls, blocks = repeated_blocks(model)
    name = type(model).__name__
    fact = {"model": name, "block": cls.__name__ if cls else None, "count": len(blocks)}
    if not blocks or cls is None:
        return f"{name}: no repeated block (regional compilation would compile it whole)", fact
    return f"{name}: {len(blocks)} blocks of {cls.__name__} repeat", fact


def _composite(module) -> bool:
    return next(iter(module.children()), None) is not None


def _outermost(model, cls) -> tuple[list, int]:
    """The instances of ``cls`` in ``model`` not inside another one (nor the model), and the
    least depth they sit at."""
    found: list[tuple[str, object]] = []
    for name, module in model.named_modules():
        if name and type(module) is cls and not any(
                name.startswith(prefix + ".") for prefix, _ in found):
            found.append((name, module))
    depth = min((name.count(".") for name, _ in found), default=0)
    return [m for _, m in found], depth


def compile_regions(blocks, compile_fn, kwargs: dict) -> None:
    """Each block compiled in place, as ``Module.compile`` does (its compiled call in the
    block's ``_compiled_call_impl`` slot, on the block alone): every instance of a class runs the
    same code, so one compile serves them all (Dynamo treats their parameters as inputs)."""
    for block in blocks:
        object.__setattr__(block, "_compiled_call_impl", compile_fn(_region_call(block), **kwargs))


def _region_call(block):
    """What a block's compile compiles: its ``_call_impl``, Dynamo then traces its ``forward``
    (the user's code); a torch class's forward lives in torch's files, where Dynamo never starts
    tracing, so it gets one frame of ours per class, named for it (torch 2.9 and older compiled
    nothing otherwise: script/compile_modes.py), shared by every instance (one compile)."""
    forward = getattr(type(block).forward, "__code__", None)
    if forward is None or not forward.co_filename.startswith(TORCH_DIR):
        return block._call_impl
    return functools.partial(_class_call(type(block)), block)


@functools.cache
def _class_call(cls):
    def call(module, *args, **kwargs):
        return module._call_impl(*args, **kwargs)

    code = call.__code__.replace(co_name=cls.__name__)
    if hasattr(code, "co_qualname"):  # Python 3.11+
        code = code.replace(co_qualname=cls.__name__)
    call.__code__ = code
    return call


# ---- autocast and memory format ----------------------------------------------------------------
LOW = (torch.bfloat16, torch.float16)


def autocast_call(call, device_type: str, dtype):
    """``call`` under autocast, its floating outputs back to fp32 as Accelerate's
    ``convert_outputs_to_fp32`` does: a loss computed outside the module stays fp32."""
    from torch.utils._pytree import tree_map_only

    def amp_call(*args, **kwargs):
        with torch.autocast(device_type, dtype):
            out = call(*args, **kwargs)
        return tree_map_only(torch.Tensor, _fp32, out)

    return amp_call


def _fp32(t):
    return t.float() if t.dtype in LOW else t


def channels_last(model) -> int:
    """The model's 4-D parameters and buffers to channels_last; how many there are (0: no
    convolution, nothing to change)."""
    four = sum(1 for t in (*model.parameters(), *model.buffers()) if t.dim() == 4)
    if four:
        model.to(memory_format=torch.channels_last)
    return four


def inputs_channels_last(inputs):
    """A 4-D input in channels_last (the trainer's step); anything else as it is."""
    if isinstance(inputs, torch.Tensor) and inputs.dim() == 4:
        return inputs.contiguous(memory_format=torch.channels_last)
    return inputs
