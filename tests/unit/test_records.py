"""A row's statistics records (analysis/stats/records.py) are frozen: a statistics module returns
a new record, never changes one; and the live fold, which replaces a run's records as its events
come, never changes a summary computed before them."""

from __future__ import annotations

import dataclasses
import json
import types

import pytest

from tuimon import events
from tuimon.analysis.stats import Collector, records
from tuimon.analysis.stats.records import GROUPS, Compiles, evolve


def not_frozen(module: types.ModuleType) -> list[str]:
    """The dataclasses ``module`` defines that are not frozen."""
    return [name for name, obj in vars(module).items()
            if isinstance(obj, type) and dataclasses.is_dataclass(obj) and obj.__module__ == module.__name__
            and not obj.__dataclass_params__.frozen]


def test_every_statistics_record_is_frozen():
    defined = {obj for obj in vars(records).values() if isinstance(obj, type)
               and dataclasses.is_dataclass(obj) and obj.__module__ == records.__name__}
    assert set(GROUPS.values()) <= defined and len(defined) >= 10
    assert not_frozen(records) == []
    for kind in defined:
        first = dataclasses.fields(kind)[0].name
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(kind(), first, None)


def test_the_frozen_check_finds_a_record_that_is_not():
    module = types.ModuleType("fake_records")

    @dataclasses.dataclass
    class Loose:
        x: int = 0

    @dataclasses.dataclass(frozen=True)
    class Tight:
        x: int = 0

    for kind in (Loose, Tight):
        kind.__module__ = module.__name__
        setattr(module, kind.__name__, kind)
    module.Timing = records.Timing  # imported from elsewhere: not this module's to judge
    assert not_frozen(module) == ["Loose"]


def test_evolve_is_replace_without_init():
    c = Compiles(compiles=2, graph_breaks=[{"where": "m.py:3", "count": 1}])
    new = evolve(c, recompiles=3, compiles=4)
    assert new == dataclasses.replace(c, recompiles=3, compiles=4) and type(new) is Compiles
    assert (c.compiles, c.recompiles) == (2, 0)  # the old record is as it was
    with pytest.raises(dataclasses.FrozenInstanceError):
        new.compiles = 5
    with pytest.raises(TypeError, match="no field recompile"):
        evolve(c, recompile=3)


def run_events(t: float, i: int) -> list[dict]:
    """A compiled run's events: a graph break seen before, a cache lookup, an artifact note, a
    recompile, a warning and a profile, then a few steps from step ``i``."""
    run = "default-fp32"
    out = [events.make(events.GRAPH_BREAK, run, t=t, file="/a/m.py", line=3, reason="print"),
           events.make(events.CACHE_LOOKUP, run, t=t, cache="fx", state="hit"),
           events.make(events.COMPILE, run, t=t, forward=True, seconds=0.5, phases={"dynamo": 0.2},
                       fx_cache_hits=1, kernels=2, kernel_s=0.1),
           events.make(events.ARTIFACTS, run, t=t, action="saved", bytes=10, text=f"saved at {i}"),
           events.make(events.RECOMPILE, run, t=t, reasons=[f"guard {i}"]),
           events.make(events.CUDAGRAPHS, run, t=t, kind="skipped", text="mutated inputs"),
           events.make(events.WARNING, run, t=t, text=f"warning at {i}"),
           events.make(events.PROFILE, run, t=t, state="done", capture=i + 1)]
    return out + [events.make(events.STEP, run, t=t + k, i=i + k, ms=10.0 + k % 3, n=8,
                              phase="steady" if i + k > 2 else "warmup") for k in range(20)]


def test_a_summary_is_not_changed_by_the_events_folded_after_it():
    """The summary's rows share the fold's records and their lists: the fold must replace them,
    never grow them in place (a summary the live view shows would change under it)."""
    c = Collector(keep_steps=100)
    c.extend([events.make(events.RUN_QUEUED, "default-fp32", t=0.0, mode="default", precision="fp32",
                          start="cold"),
              events.make(events.RUN_STARTED, "default-fp32", t=0.0, mode="default", precision="fp32")])
    c.extend(run_events(1.0, 0))
    first = c.summary()
    before = json.dumps(first.to_dict(), default=repr)
    c.extend(run_events(100.0, 20))
    assert json.dumps(first.to_dict(), default=repr) == before
    (r1,), (r2,) = first.runs, c.summary().runs
    assert [b["count"] for b in r1.compile.graph_breaks] == [1] and r2.compile.graph_breaks[0]["count"] == 2
    assert (r1.compile.recompiles, r2.compile.recompiles) == (1, 2)
    assert (r1.compile.cudagraphs[0]["count"], r2.compile.cudagraphs[0]["count"]) == (1, 2)
    assert (r1.warm.cache["fx"]["hit"], r2.warm.cache["fx"]["hit"]) == (1, 2)
    assert (r1.compile.compile_phases["dynamo"], r2.compile.compile_phases["dynamo"]) == (0.2, 0.4)
    assert (len(r1.warm.artifact_notes), len(r2.warm.artifact_notes)) == (1, 2)
    assert (len(r1.warnings), len(r2.warnings)) == (1, 2)
    assert (len(r1.profiles), len(r2.profiles)) == (1, 2)
