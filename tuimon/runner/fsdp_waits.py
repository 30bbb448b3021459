"""FSDP2's collectives in a rank's steps: the time its step spent in the all-gathers that
unshard each FSDP unit's parameters and in the reduce-scatters of its gradients, a component of
the step engine (runner/engine.py; docs/ranks.md "FSDP2").

On the CPU (gloo) these calls hold the rank's only thread until the collective is done, so the
time inside them is what the step waited for them: an all-gather's copy-in, the collective and
its copy-out (``FSDPParamGroup.unshard`` and ``wait_for_unshard``), a reduce-scatter's copy-in,
the collective and its reduction (``foreach_reduce``). On CUDA they run on their own streams and
the host's time in those calls is not their wait: nothing is measured there, and the run says so.

The totals go out as a ``collectives`` event over windows of steps, as the garbage collector's
(gc_pauses.py): steps 16, 32, 64, ..., then every 256 and at the end. Nothing is patched unless
the script imported FSDP2 before its first step; a step pays two clock reads a call."""

from __future__ import annotations

import functools
import sys
import time

from tuimon import events
from tuimon.runner.gc_pauses import EVERY, FIRST
from tuimon.runner.memory_phases import NEVER

GROUP = "torch.distributed.fsdp._fully_shard._fsdp_param_group"  # FSDP2's, torch 2.6 and later
OLD_GROUP = "torch.distributed._composable.fsdp._fsdp_param_group"  # torch 2.4 and 2.5
NOT_ON_CUDA = ("FSDP's all-gather and reduce-scatter waits are not measured on CUDA: they run on "
               "their own streams, and the host's time in FSDP's calls is not their wait")


def fsdp_group_module():
    """FSDP2's param-group module, when the script imported FSDP2; else None."""
    return sys.modules.get(GROUP) or sys.modules.get(OLD_GROUP)


class FsdpWaits:
    def __init__(self, group_module, compiling) -> None:
        self.group_module = group_module
        self.compiling = compiling  # torch.compiler.is_compiling: inside a traced frame, no clock
        self.due = NEVER
        self.seconds = {"all_gather": 0.0, "reduce_scatter": 0.0}
        self.calls = {"all_gather": 0, "reduce_scatter": 0}
        self._depth = 0  # a call inside another timed one is the outer one's
        self._ran = False  # FSDP ran a collective: its windows are said from then on
        self._undo: list[tuple[object, str, object]] = []
        self._from = 0

    def _timed(self, kind: str, fn):
        waits = self

        @functools.wraps(fn)
        def timed(*args, **kwargs):
            if waits._depth or waits.compiling():
                return fn(*args, **kwargs)
            waits._depth += 1
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                waits.seconds[kind] += time.perf_counter() - t0
                waits.calls[kind] += 1
                waits._depth -= 1

        return timed

    def _patch(self, owner, name: str, kind: str) -> None:
        fn = getattr(owner, name, None)
        if fn is not None:
            self._undo.append((owner, name, fn))
            setattr(owner, name, self._timed(kind, fn))

    def start(self, engine) -> None:
        group = getattr(self.group_module, "FSDPParamGroup", None)
        if group is not None:
            self._patch(group, "unshard", "all_gather")
            self._patch(group, "wait_for_unshard", "all_gather")
        self._patch(self.group_module, "foreach_reduce", "reduce_scatter")  # post_backward's call
        self._from, self.due = engine.i, engine.i + FIRST

    def boundary(self, engine, i: int) -> None:
        self._said(engine, i)
        self.due = i + min(max(i, FIRST), EVERY)

    def end(self, engine) -> None:
        for owner, name, fn in reversed(self._undo):
            setattr(owner, name, fn)
        self._undo = []
        self._said(engine, engine.i)

    def _said(self, engine, i: int) -> None:
        # Nothing is said until FSDP first ran a collective: a script that imports FSDP2 and
        # trains with DDP has no FSDP figures, not zeros
        self._ran = self._ran or any(self.calls.values())
        if i > self._from and self._ran:
            engine.emitter.emit(events.COLLECTIVES, steps=[self._from, i], what="fsdp",
                                seconds={k: round(v, 6) for k, v in self.seconds.items()},
                                calls=dict(self.calls))
        self._from = i
        self.seconds = dict.fromkeys(self.seconds, 0.0)
        self.calls = dict.fromkeys(self.calls, 0)
