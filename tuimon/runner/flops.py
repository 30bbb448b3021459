"""FLOPs of one training step, per phase (forward, backward, optimizer), counted once per variant
by torch's own counter (``torch.utils.flop_counter.FlopCounterMode``), then emitted as one
``flops`` event (tuimon/events.py).

Where the count runs, and why there: on an extra step *between* the measured ones, never inside
one. A recipe's runs it before its first step, after its first turn began (runner/flop_event.py); a
script's at a step boundary in its warm-up (runner/script/flop_catch.py), both outside every
step's clock. A counting step costs several times a plain one (the counter's dispatch on every
op), so inside a step it would have to be kept out of every statistic; as an extra step it is in
none, and the hot path carries nothing of it.

The extra step trains the model, so it is undone (``Snapshot``): parameters, buffers (BatchNorm's
running stats), each module's plain Python numbers and flags (a forward that counts its calls),
gradients, the optimizer's state and hyper-parameters, and every random generator (Python's,
NumPy's, torch's CPU and CUDA) are put back exactly as they were, in place (the tensors the run
holds stay the same objects). What it cannot put back is Python state outside the model: a
recipe's ``forward_loss`` that counts its calls in a closure or a global sees one call more.
Each tensor's autograd version goes back too: a graph the script built before the count (a
GAN's generator loss through the discriminator just stepped) still finds the tensors it saved
as it saved them. The measured steps then train from the same state as without the count, so
eager and compiled variants keep today's loss parity (tests/e2e/test_flops_runs.py checks a
run's losses with and without it).

It runs on the eager module (a compiled variant's ``_orig_mod``, a DDP wrapper's ``module``) and
the optimizer's eager step: FlopCounterMode does not see inside compiled graphs, and running a
compiled frame under it would compile it again. A compiled variant's FLOPs are therefore its
eager module's (docs/measuring.md says what that cannot see).

The precision the FLOPs ran in is read off the ops themselves (the dtype of each counted op's
first tensor input), so autocast, a script's own ``.half()`` and TF32 are told apart without
asking the settings.
"""

from __future__ import annotations

import contextlib
import random
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch.utils.flop_counter import FlopCounterMode, conv_flop_count

PHASES = ("forward", "backward", "optimizer")
TOP_OPS = 6  # the ops with the most FLOPs a step, named in the event


def conv_backward_flop(grad_out_shape, x_shape, w_shape, _bias, _stride, _padding, _dilation,
                       transposed, _output_padding, _groups, output_mask, out_shape=None,
                       **kwargs) -> int:
    """A convolution's backward: its forward's FLOPs once for the input's gradient and once for
    the weight's, as asked (``output_mask``). torch's own formula (2.14) counts the weight's
    gradient as a dense convolution over the batch whatever the groups: a depthwise 7×7 conv of
    64 channels read 65× its forward in backward instead of 2× (ConvNeXt-L's step at 64 px: 200
    GFLOP counted for 67)."""
    forward = conv_flop_count(x_shape, w_shape, grad_out_shape, transposed)
    return forward * (int(bool(output_mask[0])) + int(bool(output_mask[1])))


class Counter(FlopCounterMode):
    """FlopCounterMode, its grouped convolutions' backward counted right, that also keeps each
    counted op's FLOPs by input dtype."""

    def __init__(self) -> None:
        super().__init__(display=False,
                         custom_mapping={torch.ops.aten.convolution_backward: conv_backward_flop})
        self.by_dtype: dict[str, int] = {}

    def _count_flops(self, func_packet, out, args, kwargs):  # torch >= 2.3's hook
        out_val = super()._count_flops(func_packet, out, args, kwargs)
        if func_packet in self.flop_registry:
            first = next((a for a in args if isinstance(a, torch.Tensor)), None)
            name = str(first.dtype).replace("torch.", "") if first is not None else "?"
            flops = self.flop_registry[func_packet](*args, **kwargs, out_val=out)
            self.by_dtype[name] = self.by_dtype.get(name, 0) + int(flops)
        return out_val


def precision_of(by_dtype: dict[str, int], on_cuda: bool) -> str | None:
    """The precision most of the step's FLOPs ran in: fp32 (tf32 where CUDA's matmuls may use
    it), bf16, fp16, fp8; None when nothing was counted."""
    if not by_dtype:
        return None
    top = max(by_dtype, key=by_dtype.__getitem__)
    if top.startswith("float8"):
        return "fp8"
    named = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32", "float64": "fp64"}.get(top)
    if named == "fp32" and on_cuda and (torch.backends.cuda.matmul.allow_tf32
                                         or torch.get_float32_matmul_precision() != "highest"):
        return "tf32"
    return named or top


_PLAIN = (int, float, bool, str, type(None))


def _keep(t):
    """A copy of ``t`` in host memory (a GPU's is the scarce one: a model that fills it still
    counts), and the device it goes back to."""
    t = t.detach()
    return (t.to("cpu", copy=True) if t.device.type != "cpu" else t.clone()), t.device


def random_state() -> tuple:
    """Every random stream a training step may draw from: Python's, torch's (CPU, each CUDA
    device's), numpy's global one (a user's augmentation)."""
    np_state = None
    with contextlib.suppress(ImportError):
        import numpy as np

        np_state = np.random.get_state()
    return (random.getstate(), torch.get_rng_state(),
            torch.cuda.get_rng_state_all() if torch.cuda.is_initialized() else None, np_state)


def set_random_state(state: tuple) -> None:
    py, cpu, cuda, np_state = state
    random.setstate(py)
    torch.set_rng_state(cpu)
    if cuda is not None:
        torch.cuda.set_rng_state_all(cuda)
    if np_state is not None:
        import numpy as np

        np.random.set_state(np_state)


@contextlib.contextmanager
def random_streams_kept():
    """Whatever runs inside draws what it likes: the run's streams go on as if it had not."""
    state = random_state()
    try:
        yield
    finally:
        set_random_state(state)


class Snapshot:
    """What one extra training step changes, kept in host memory to be put back exactly, in
    place (the tensors the run holds stay the same objects)."""

    def __init__(self, module, optimizer) -> None:
        params = list(module.parameters())
        if optimizer is not None:
            params += [p for g in optimizer.param_groups for p in g["params"]]
        self.params = list({id(p): p for p in params}.values())
        held = {id(t): t for t in (*self.params, *module.buffers())}
        self.tensors = [(t, _keep(t)[0]) for t in held.values()]
        # The step's gradients go to fresh tensors (``clear_grads``); these are put back as they
        # are, untouched.
        self.grads = [(p, p.grad) for p in self.params]
        # Each module's plain numbers and flags (a forward that counts its calls, a schedule's
        # step): the Python state of the model's own a step may change.
        self.attrs = [(m, {k: v for k, v in vars(m).items() if type(v) in _PLAIN})
                      for m in module.modules()]
        self.optimizer = optimizer
        if optimizer is not None:
            self.state = {id(p): {k: (_keep(v) if isinstance(v, torch.Tensor) else v)
                                  for k, v in s.items()} for p, s in optimizer.state.items()}
            self.keys = list(optimizer.state.keys())
            self.groups = [{k: v for k, v in g.items() if k != "params"}
                           for g in optimizer.param_groups]
        self.rng = random_state()

        self.versions = [(t, t._version) for t, _ in self.tensors]
        if optimizer is not None:
            self.versions += [(v, v._version) for s in optimizer.state.values() for v in s.values()
                              if isinstance(v, torch.Tensor)]

    def clear_grads(self) -> None:
        for p in self.params:
            p.grad = None

    @torch.no_grad()
    def restore(self) -> None:
        for t, saved in self.tensors:
            t.copy_(saved)
        for m, saved in self.attrs:
            m.__dict__.update(saved)
        for p, g in self.grads:
            p.grad = g
        opt = self.optimizer
        if opt is not None:
            live = opt.state
            for p in list(live.keys()):
                if id(p) not in self.state:
                    del live[p]  # state the counting step made (an Adam's first moments)
            for p in self.keys:
                saved, state = self.state[id(p)], live[p]
                for k in [k for k in state if k not in saved]:
                    del state[k]
                for k, v in saved.items():
                    cur = state.get(k)
                    if isinstance(v, tuple) and isinstance(cur, torch.Tensor) \
                            and cur.shape == v[0].shape and cur.dtype == v[0].dtype:
                        cur.copy_(v[0])
                    else:
                        state[k] = v[0].to(v[1], copy=True) if isinstance(v, tuple) else v
            for g, saved in zip(opt.param_groups, self.groups, strict=True):
                g.update(saved)
        set_versions = getattr(torch._C._autograd, "_unsafe_set_version_counter", None)
        if set_versions is not None:  # torch >= 2.3: the values are as saved, and so their versions
            set_versions(tuple(t for t, _ in self.versions), tuple(v for _, v in self.versions))
        set_random_state(self.rng)


def eager_module(module):
    """The module without its compiled wrapper (``torch.compile``'s ``_orig_mod``) or DDP's
    (``module``): what FlopCounterMode can see, and no collective in the counting step."""
    for _ in range(4):
        inner = getattr(module, "_orig_mod", None)
        if inner is None and type(module).__name__ in ("DistributedDataParallel", "DataParallel"):
            inner = getattr(module, "module", None)
        if inner is None:
            return module
        module = inner
    return module


def eager_step(optimizer):
    """The optimizer's step as its class defines it, without torch's step hooks (a script's
    step boundary listens there) and past an instance's compiled step (``+opt``)."""
    hooked = type(optimizer).step
    body = getattr(hooked, "__wrapped__", None)
    if body is None or not getattr(hooked, "hooked", False):
        return lambda: hooked(optimizer)
    return lambda: body(optimizer)


@dataclass(frozen=True)
class Calls:
    """A step's training calls alike (the same arguments' shapes): ``forward()`` makes one of
    them, ``times`` were made, ``backed`` of them reached by a backward (a DQN's acting calls,
    made with gradients on and never differentiated, are forwards alone)."""
    forward: Callable[[], object]
    times: int = 1
    backed: int = 1


def count_step(module, optimizer, calls, backward, *, on_cuda: bool = False,
               keep: bool = True) -> dict:
    """One extra step's FLOPs: ``calls``, a forward (``forward()`` returns what
    ``backward(out)`` differentiates) or a list of ``Calls``, each counted once and multiplied
    by how many a real step makes; ``optimizer``'s eager step follows. The model and every
    generator are put back as they were (``keep``: False only in tests). Returns the ``flops``
    event's fields."""
    groups = [Calls(calls)] if callable(calls) else list(calls)
    t0 = time.perf_counter()
    snap = Snapshot(module, optimizer) if keep else None
    counted: dict[str, int | None] = {name: 0 for name in PHASES}
    ops: dict[str, int] = {}
    by_dtype: dict[str, int] = {}

    def add(name: str, c: Counter, scale: int) -> None:
        counted[name] = (counted[name] or 0) + c.get_total_flops() * scale
        for op, n in c.get_flop_counts().get("Global", {}).items():
            ops[str(op)] = ops.get(str(op), 0) + n * scale
        for dtype, n in c.by_dtype.items():
            by_dtype[dtype] = by_dtype.get(dtype, 0) + n * scale

    try:
        if snap is not None:
            snap.clear_grads()  # the step's own gradients, not leftovers (those are kept)
        elif optimizer is not None:
            optimizer.zero_grad(set_to_none=True)
        for group in groups:  # one group's graph alive at a time
            with Counter() as c:
                out = group.forward()
            add("forward", c, group.times)
            if group.backed:
                with Counter() as c:
                    backward(out)
                add("backward", c, group.backed)
            out = None
        if optimizer is None:
            counted["optimizer"] = None
        else:
            with Counter() as c:
                eager_step(optimizer)()
            add("optimizer", c, 1)
    finally:
        out = None
        if snap is not None:
            snap.restore()
    top = dict(sorted(ops.items(), key=lambda kv: -kv[1])[:TOP_OPS])
    return {**counted, "step": sum(v for v in counted.values() if v),
            "precision": precision_of(by_dtype, on_cuda), "dtypes": by_dtype, "ops": top,
            "calls": sum(g.times for g in groups), "backed": sum(g.backed for g in groups),
            "shapes": len(groups), "counted_on": "eager", "seconds": round(time.perf_counter() - t0, 3)}


def backward_of(out, params=()) -> None:
    """Backward from a forward's output, whatever it is: a loss (a scalar), or a script module's
    outputs (each float tensor that requires grad, as if summed into a loss: the module's
    backward FLOPs do not depend on the gradient flowing in), through the autograd engine itself
    (never ``torch.autograd.backward``'s name: a script's hooks count the calls there).
    ``params``: the only tensors that get a gradient (a GAN's discriminator's input comes from
    the generator: its parameters must not)."""
    leaves = [t for t in tensors_in(out) if t.requires_grad and t.is_floating_point()]
    if not leaves:
        raise ValueError("the forward's output has nothing to differentiate")
    grads = [torch.ones_like(t) for t in leaves]
    from torch.autograd import Variable

    Variable._execution_engine.run_backward(tuple(leaves), tuple(grads), False, False,
                                            tuple(params), allow_unreachable=True,
                                            accumulate_grad=True)


def detached(obj):
    """A call's arguments cut from the graph they came from (no gradient flows back out of the
    counted step into what made them)."""
    if isinstance(obj, torch.Tensor):
        return obj.detach()
    if isinstance(obj, (list, tuple)) and type(obj) in (list, tuple):
        return type(obj)(detached(o) for o in obj)
    if isinstance(obj, dict) and type(obj) is dict:
        return {k: detached(v) for k, v in obj.items()}
    return obj


def tensors_in(obj):
    """Every tensor in a call's arguments or output (lists, tuples, dicts, a dataclass, a HF ModelOutput)."""
    if isinstance(obj, torch.Tensor):
        yield obj
    elif isinstance(obj, (list, tuple)):
        for o in obj:
            yield from tensors_in(o)
    elif isinstance(obj, dict):
        for o in obj.values():
            yield from tensors_in(o)
    elif hasattr(obj, "__dataclass_fields__") or hasattr(obj, "to_tuple"):  # a HF ModelOutput
        with contextlib.suppress(Exception):
            yield from tensors_in(obj.to_tuple() if hasattr(obj, "to_tuple") else vars(obj))
