"""How the runner holds on to the user's objects: weakly, so that a model or optimizer the
script lets go is freed when it would be without tuimon (runner/script/phases.py says what a
DDP model held past ``main()`` did), and how an optimizer names what it trains."""

from __future__ import annotations

import weakref


def weak(thing):
    """A callable giving ``thing`` back while it lives (a weak reference), or None for None; a
    strong one where its class takes no weak reference (``__slots__``)."""
    if thing is None:
        return None
    try:
        return weakref.ref(thing)
    except TypeError:
        return lambda: thing


def param_ids(optimizer) -> set[int]:
    """The ids of the parameters ``optimizer`` trains (a module holding them all is the model)."""
    return {id(p) for group in optimizer.param_groups for p in group["params"]}
