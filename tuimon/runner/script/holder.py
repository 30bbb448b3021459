"""The module an optimizer trains, found without a hook: for a training after the first.

A global module hook armed while compiled code runs costs the compiled model its graphs: Dynamo
guards on the global hook dict wherever a compiled forward inlines a submodule's ``_call_impl``,
so adding or removing one recompiles it (a knowledge-distillation script's compiled student
recompiled at each new training, its teacher's no-grad forward too), and a hook run under a
compiled module's frame callback is compiled as a frame of its own. So once the first step has
ended, a new training's module is looked up among the live modules instead, as the lead changes
(at a step boundary, once a training): the modules the script or tuimon compiled first (the
module the script calls), then a scan of every live ``nn.Module`` for the ones holding all the
optimizer's parameters. The tightest of those (fewest parameters: the model, not a container
that also holds the teacher) is taken, and of modules holding just as many the outermost: a DDP
or torch.compile wrapper, which is what the script calls, as the first training's hook finds it.
"""

from __future__ import annotations

import gc

import torch


def _ids(module) -> set[int] | None:
    try:
        return {id(p) for p in module.parameters()}
    except AttributeError:  # a module caught half-built (its __init__ still running)
        return None


def holder(params: set[int], known=()):
    """The module holding all of ``params`` (an optimizer's), or None: one of ``known`` (the
    compiled modules, latest first) if any holds them, else the tightest live module."""
    if not params:
        return None
    for module in known:
        if module is not None and params <= (_ids(module) or set()):
            return module
    # type(), not isinstance(): a dead weakref.proxy among the objects raises on isinstance
    module_type = torch.nn.Module
    modules = [o for o in gc.get_objects() if issubclass(type(o), module_type)]
    first = next(iter(params))
    parents: dict[int, list] = {}  # a module's id -> the modules it is a child of
    todo = []  # the modules holding ``first`` directly, then their ancestors
    for m in modules:
        for child in (getattr(m, "_modules", None) or {}).values():
            if child is not None:
                parents.setdefault(id(child), []).append(m)
        if any(id(p) == first for p in (getattr(m, "_parameters", None) or {}).values()):
            todo.append(m)
    seen: set[int] = set()
    holding: list[tuple[int, object]] = []
    while todo:  # every module holding ``first``: only these can hold them all
        m = todo.pop()
        if id(m) in seen:
            continue
        seen.add(id(m))
        ids = _ids(m)
        if ids is not None and params <= ids:
            holding.append((len(ids), m))
        todo.extend(parents.get(id(m), ()))
    if not holding:
        return None
    least = min(n for n, _ in holding)
    tightest = [m for n, m in holding if n == least]
    return max(tightest, key=lambda m: sum(1 for _ in m.modules()))  # its wrapper, if any
