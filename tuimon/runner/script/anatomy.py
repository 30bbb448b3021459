"""How tuimon read a script's loop, as data (issue 40): the step (which optimizer's ``step()``
ends it, and how many batches and ``backward()`` calls it held), every other optimizer and how
often it stepped, the module each one trains and how each was compiled, what a step's loss is,
and the calls outside training (a validation pass, eval inside a step, the trained module called
with gradients off: sampling, generation, a rollout) with the steps that held them. Said as an
``anatomy`` event once the first steps have run and again at the run's end (the summary keeps the
last), so a user who knows their script can check the reading at a glance and a test can assert
it. Counting is a few dict updates at a step's end; nothing here is on a step's clock."""

from __future__ import annotations

import sys

from tuimon import events
from tuimon.runner.refs import param_ids, weak

SAID_AT = 8  # the step after which the first reading is said (the warm-up's compiles are in)
KEPT_STEPS = 12  # the steps kept per kind of work outside training (and their count)


class Optimizer:
    """One optimizer the script made: what it is, what it trains, how often it stepped."""

    __slots__ = ("ref", "name", "params", "count", "steps", "module", "compiled", "beside", "made",
                 "now", "first", "last", "per_step", "idle", "blocks")

    def __init__(self, optimizer, made: int) -> None:
        self.ref = weak(optimizer)
        self.name = type(optimizer).__name__
        self.params = param_ids(optimizer)
        self.count = sum(p.numel() for g in optimizer.param_groups for p in g["params"])
        self.steps = 0
        self.module: str | None = None  # the class of the module holding all its parameters
        # How that module runs in this variant (compile_modes.py's codes: tuimon, script,
        # variant, inside, holds, ...), and the module that depends on (inside, holds).
        self.compiled: str | None = None
        self.beside: str | None = None
        # Its module compiled block by block (by the script, or by tuimon for a fully_shard-ed
        # model): {"class": the blocks' class, "count": how many} (trained.py's blocks_of)
        self.blocks: dict | None = None
        self.made = made  # 0: the first optimizer made
        # Its step() calls in each of the lead's steps, from the first it stepped in to the last
        # (steps without one after its last are its training's end, not its cadence): {calls:
        # steps}; a SAC's actor {0: 500, 2: 499} is twice every other step
        self.now = 0  # step() calls in the step going on
        self.first: int | None = None
        self.last: int | None = None
        self.per_step: dict[int, int] = {}
        self.idle = 0  # steps without one since its last

    def ended(self, i: int) -> None:
        """The lead's step ``i`` ended: its step() calls in it counted."""
        if self.now:
            if self.first is None:
                self.first = i
            elif self.idle:
                self.per_step[0] = self.per_step.get(0, 0) + self.idle
            self.per_step[self.now] = self.per_step.get(self.now, 0) + 1
            self.last, self.now, self.idle = i, 0, 0
        elif self.first is not None:
            self.idle += 1

    def row(self) -> dict:
        return {"optimizer": self.name, "params": self.count, "steps": self.steps,
                "module": self.module, "compiled": self.compiled, "beside": self.beside,
                "blocks": self.blocks,
                "span": [self.first, self.last] if self.first is not None else None,
                "per_step": {str(k): v for k, v in sorted(self.per_step.items())}}


class Anatomy:
    def __init__(self, emitter, leader) -> None:
        self.emitter = emitter
        self.leader = leader  # lead.py's Lead: the lead optimizer, or steps by backward()
        self.optimizers: list[Optimizer] = []
        self.backwards: dict[int, int] = {}  # backward() calls a step -> steps
        self.losses: dict[int, int] = {}  # the backward() losses a step's loss sums -> steps
        self.outside: dict[str, dict] = {}  # kind -> {"steps": [...], "count": n, "gaps": g}
        # The lead's changes: a second training (the lead let go), another optimizer taking over
        # from an idle lead; the first lead too, at step 0: {"step", "optimizer"} (the first 12)
        self.trainings: list[dict] = []
        self.changes = 0
        self._lead: Optimizer | None = None  # the latest lead's record (its optimizer may be gone)
        self.said = False
        self.epoch: int | None = None  # the training loader's batches an epoch (steps.py)

    def made(self, optimizer) -> None:
        self.optimizers.append(Optimizer(optimizer, len(self.optimizers)))

    def of(self, optimizer) -> Optimizer | None:
        for seen in self.optimizers:
            if seen.ref() is optimizer:
                return seen
        return None

    def stepped(self, optimizer) -> None:
        seen = self.of(optimizer)
        if seen is not None:
            seen.steps += 1
            seen.now += 1

    def lead_changed(self, optimizer, i: int) -> None:
        """``optimizer`` leads from step ``i`` on (the first lead: step 0)."""
        self.changes += 1
        seen = self.of(optimizer)
        self._lead = seen if seen is not None else self._lead
        if len(self.trainings) < KEPT_STEPS:
            self.trainings.append({"step": i, "optimizer": seen.made if seen is not None else None})

    def trains(self, optimizer, modules: list, how: str, beside: str | None = None,
               blocks: dict | None = None) -> None:
        """``modules`` hold ``optimizer``'s parameters (one module holding them all, or the parts
        the script called; none: not found), and run as ``how`` says in this variant (trained.py's
        code; ``beside``: the module they are compiled inside, or hold; ``blocks``: the blocks
        compiled one by one inside them, {"class", "count"})."""
        seen = self.of(optimizer)
        if seen is not None:
            seen.module = " + ".join(_name(m) for m in modules) or None
            seen.compiled, seen.beside, seen.blocks = how, beside, blocks

    def step_ended(self, i: int, backwards: int, summed: int, held: str | None, gap: bool) -> None:
        """Step ``i`` ended with ``backwards`` backward() calls, its loss the sum of ``summed``
        of them, and ``held`` other work than training (validation.py's kinds), if any; ``gap``:
        kept out of the steady state for it (work that recurs step after step is the step's)."""
        for seen in self.optimizers:
            seen.ended(i)
        self.backwards[backwards] = self.backwards.get(backwards, 0) + 1
        self.losses[summed] = self.losses.get(summed, 0) + 1
        if held is not None:
            kept = self.outside.setdefault(held, {"steps": [], "count": 0, "gaps": 0})
            kept["count"] += 1
            kept["gaps"] += gap
            if len(kept["steps"]) < KEPT_STEPS:
                kept["steps"].append(i)
        if i + 1 == SAID_AT:
            self.say()

    def say(self) -> None:
        """The reading so far as an ``anatomy`` event (again at the end: counts grow)."""
        self.said = True
        steps = sum(self.backwards.values())
        lead = self.leader.lead
        lead_seen = self.of(lead) if lead is not None else None
        if lead_seen is None and not self.leader.by_backward:
            lead_seen = self._lead  # let go with its training, as the script ended: still the lead
        rows = []
        for seen in self.optimizers:
            row = seen.row()
            row["lead"] = seen is lead_seen
            stepping = sum(n for k, n in seen.per_step.items() if k)
            if stepping > 1:  # lead steps from one of its steps to the next, over its own span
                row["every"] = round((seen.last - seen.first) / (stepping - 1), 2)
            rows.append(row)
        self.emitter.emit(events.ANATOMY, steps=steps, ends_at="backward" if self.leader.by_backward
                          else "optimizer.step", inside=self.leader.inside, optimizers=rows,
                          backwards=_keys(self.backwards), loss_sums=_keys(self.losses),
                          outside=self.outside, trainings=self.trainings, lead_changes=self.changes,
                          epoch=self.epoch)


def _name(module) -> str:
    """A module's class; torch.compile's wrapper and DDP named for what they wrap, a module
    fully_shard made an FSDP unit (class ``FSDP<its class>``) for its own class."""
    inner = getattr(module, "_orig_mod", None) or getattr(module, "module", None)
    wrapper = type(module).__name__
    if inner is not None and wrapper in ("OptimizedModule", "DistributedDataParallel"):
        own = _name(inner)
        how = "torch.compile" if wrapper == "OptimizedModule" else "DDP"
        return f"{own[:-1]}, {how})" if own.endswith(" (fully_shard)") else f"{own} ({how})"
    return f"{own_class(module)} (fully_shard)" if sharded(module) else wrapper


# Where FSDP2's FSDPModule lives: torch.distributed.fsdp from torch 2.6, its _composable home before
FSDP_HOMES = ("torch.distributed.fsdp", "torch.distributed._composable.fsdp")


def fsdp_class():
    """FSDP2's ``FSDPModule`` (``fully_shard`` makes a module's class a subclass of it), when
    the script imported FSDP2; never imported here (a script without it pays nothing)."""
    for home in FSDP_HOMES:
        kind = getattr(sys.modules.get(home), "FSDPModule", None)
        if kind is not None:
            return kind
    return None


def sharded(module) -> bool:
    """Whether ``fully_shard`` made ``module`` an FSDP unit."""
    kind = fsdp_class()
    return kind is not None and isinstance(module, kind)


def own_class(module) -> str:
    """A module's own class: torch.compile's ``OptimizedModule`` looked through, fully_shard's
    ``FSDPTransformerBlock`` named ``TransformerBlock``."""
    if type(module).__name__ == "OptimizedModule":
        module = getattr(module, "_orig_mod", module)
    kind, fsdp = type(module), fsdp_class()
    if fsdp is not None and isinstance(module, fsdp):
        kind = next((k for k in kind.__mro__[1:] if not issubclass(k, fsdp)), kind)
    return kind.__name__


def _keys(counts: dict[int, int]) -> dict[str, int]:
    """JSON's object keys are text: {"1": 380, "2": 20}, in order."""
    return {str(k): v for k, v in sorted(counts.items())}
