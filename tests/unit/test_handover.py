"""Issue 24: one of tuimon's runs starting or ending never loads the machine under another's
measured steps (the schedule waits: control/handover.py), and what tuimon's own runs load beside
a run's steps anyway counts as load, named as theirs (analysis/stats/load.py).

The real runs are in tests/e2e/test_handover_runs.py."""

from __future__ import annotations

import json
import os
import time

from conftest import wait_for
from test_stats import run_events

from tests import fake_pynvml as fake
from tuimon import events
from tuimon.analysis.stats import summarize
from tuimon.analysis.stats.load import load_figures
from tuimon.control.handover import Handover
from tuimon.control.runs import Plan, Run, RunTable
from tuimon.control.sampler import Sampler
from tuimon.control.schedule import Schedule
from tuimon.probes import GpuProbe
from tuimon.report.trust_text import load_words, row_notes, unreliable_text
from tuimon.sessiondir.run_state import RunState
from tuimon.settings import RunSettings
from tuimon.variants import Variant


class FakeChild:
    def __init__(self, started: float) -> None:
        self.started, self.sent, self.linger = started, [], False

    def send(self, line: str) -> bool:
        self.sent.append(line)
        return True

    def lingering(self) -> bool:
        return self.linger


class Loop:
    """The schedule of turns and the handover, as the supervisor owns them, over fake children."""

    def __init__(self, schedule: str, settle_s: float = 60.0) -> None:
        plan = Plan(RunSettings(), [], schedule, settle_s=settle_s)
        self.table, self.recorded = RunTable(), []
        self.handover = Handover(plan, self.table, self.recorded.extend, stop=None)
        self.schedule = Schedule(plan, self.table, self.handover)

    def add(self, run: str, started: float | None = None) -> Run:
        r = self.table.runs[run] = self.table.live[run] = Run(run, Variant("eager", "fp32"),
                                                              state=RunState(run))
        r.child = FakeChild(time.monotonic() if started is None else started)
        return r

    def may_start(self) -> bool:
        self.table.queue[:] = ["next"]  # a run waits to start
        self.table.runs["next"] = Run("next", Variant("eager", "fp32"), state=RunState("next"))
        try:
            return bool(self.schedule.startable()[0])
        finally:
            del self.table.queue[:], self.table.runs["next"]


def test_the_turn_waits_for_a_build_an_end_and_an_exit_each_at_most_settle_s():
    loop = Loop("interleave")
    a, b = loop.add("a"), loop.add("b")
    a.waiting_turn = True
    loop.schedule.pass_turn()
    assert loop.schedule.holder is None  # b still builds
    b.waiting_turn = True
    loop.schedule.pass_turn()
    assert loop.schedule.holder == "a" and a.child.sent == ["resume"]
    assert not loop.may_start()  # a steps: nothing starts beside it
    a.state.status = "done"  # a said it finished; its process still runs
    loop.schedule.pass_turn()
    assert loop.schedule.holder is None and b.child.sent == []
    del loop.table.live["a"]  # reaped, but a DataLoader worker of its group still runs
    a.child.linger = True
    loop.handover.exited(a)
    loop.schedule.pass_turn()
    assert loop.schedule.holder is None and loop.may_start()  # no one steps: a build may start
    a.child.linger = False
    loop.schedule.pass_turn()
    assert loop.schedule.holder == "b" and not loop.handover.exiting()
    # Past settle_s the turns go on, said once.
    late = Loop("interleave", settle_s=5.0)
    c = late.add("c")
    late.add("d", started=time.monotonic() - 10.0)  # building for 10 s
    for _ in range(2):
        c.waiting_turn = True
        late.schedule.over("c")
        late.schedule.pass_turn()
        assert late.schedule.holder == "c"
    assert [e["text"] for e in late.recorded] == [
        "it is still starting 10 s on: the other runs step beside it (its CPU counts as load on "
        "their steps)"]


def test_sequential_waits_for_the_last_runs_processes_and_parallel_for_nothing():
    loop = Loop("sequential")
    a = loop.add("a")
    del loop.table.live["a"]
    a.child.linger = True
    loop.handover.exited(a)
    assert not loop.may_start()
    a.child.linger = False
    assert loop.may_start() and not loop.handover.exiting()
    side_by_side = Loop("parallel")
    e = side_by_side.add("e")
    e.child.linger = True
    side_by_side.handover.exited(e)
    assert side_by_side.may_start() and not side_by_side.handover.exiting()


def test_a_turn_handed_over_starts_a_sample_period_and_samples_say_who_stepped():
    got: list[list[dict]] = []
    sampler = Sampler(30.0, lambda: {"r": os.getpid()}, got.append,
                      gpu=GpuProbe(fake.make([], init_error=fake.NVML_ERROR_LIBRARY_NOT_FOUND)),
                      stepping=lambda since: set() if since is None else {"r"})
    sampler.start()
    try:
        wait_for(lambda: got, 5.0, "the first sample")
        sampler.poke()  # at once, not 30 s later
        wait_for(lambda: len(got) >= 2, 5.0, "a sample when poked")
    finally:
        sampler.stop()
    samples = [e for batch in got for e in batch if e["type"] == events.SAMPLE]
    assert [s["stepping"] for s in samples[:2]] == [[], ["r"]]


def interleaved(own: dict[int, float], n=60, schedule="interleave"):
    """Two runs taking turns of 10 steps (one a second), one sample a second; ``own``: t - 1000
    of a's steps -> the cores b used in that period (b's background while a stepped)."""
    evs = [events.make(events.SESSION_STARTED, schedule=schedule)]
    a = run_events("a", "eager", "fp32", [10.0] * n)
    b = run_events("b", "default", "fp32", [10.0] * n)
    for k, e in enumerate(a[2:-1]):
        e["t"] = 1000.0 + k + 10 * (k // 10)  # a steps in [1000, 1010), [1020, 1030), ...
        if own.get(k):
            e["ms"] = 50.0  # slowed by the load
    for k, e in enumerate(b[2:-1]):
        e["t"] = 1010.0 + k + 10 * (k // 10)
    evs += a + b
    for t in range(1000, 1000 + 2 * n):
        a_steps = (t - 1000) % 20 < 10
        k = (t - 1000) // 20 * 10 + (t - 1000) % 20
        cores = own.get(k, 0.02) if a_steps else 0.02
        runs = {"a": {"cpu_percent": 100.0}, "b": {"cpu_percent": 100.0}}
        runs["b" if a_steps else "a"]["cpu_percent"] = cores * 100.0
        s = events.make(events.SAMPLE, system={"foreign_cores": 0.05}, devices=[], runs=runs,
                        stepping=["a" if a_steps else "b"])
        s["t"] = float(t) + 0.5  # the period (t - 0.5, t + 0.5] holds step t
        evs.append(s)
    return evs


def rows(evs):
    return {r.run: r for r in summarize(evs).runs}


def notes(r, quiet_only: bool = False) -> list[str]:
    """A row's notes in report/trust_text.py's words."""
    return row_notes(r, quiet_only)


def load_text(r) -> str:
    return load_words(load_figures(r))


def test_a_few_steps_beside_the_sessions_other_runs_are_kept_out_and_said():
    r = rows(interleaved({33: 1.2, 34: 1.2, 35: 1.2}))
    a = r["a"]
    assert a.load.own_dropped == 3 and a.timing.median_ms == 10.0 and a.timing.p90_ms == 10.0
    assert ("other runs of this session used ~1.2 cores during 3 of its steps: kept out of its "
            "steady state") in notes(a)
    assert a.load.own_cores is not None and a.load.own_cores < 0.05  # the kept steps' load
    assert r["b"].load.own_dropped == 0 and not notes(r["b"])


def test_many_steps_beside_them_stay_and_count_as_load():
    r = rows(interleaved({k: 1.2 for k in range(10, 40)}))
    a, b = r["a"], r["b"]
    assert a.load.own_dropped == 0 and a.timing.p90_ms == 50.0
    assert any("during 30 of its steps: too many to keep out" in n for n in notes(a)), notes(a)
    assert a.load.own_cores > 0.5
    assert load_text(a).startswith("~0.") and "of them other runs of this session" in load_text(a)
    assert a.load.load_differs or b.load.load_differs  # b's neighbours were quiet: not comparable
    text = (unreliable_text(b) or "") + (unreliable_text(a) or "")
    assert "other runs of this session" in text, text


def test_with_quiet_only_every_step_beside_them_is_kept_out():
    evs = interleaved({k: 1.2 for k in range(10, 40)})
    evs[0]["quiet_only"] = True
    a = rows(evs)["a"]
    assert a.load.own_dropped == 30 and a.timing.median_ms == 10.0
    assert any("(--quiet-only)" in n for n in notes(a, quiet_only=True))


def test_parallel_runs_are_not_load_on_each_other():
    r = rows(interleaved({k: 1.2 for k in range(10, 40)}, schedule="parallel"))
    assert r["a"].load.own_cores is None and r["a"].load.own_dropped == 0 and not notes(r["a"])


def test_an_old_session_without_stepping_says_nothing_of_its_runs():
    evs = interleaved({33: 1.2})
    for e in evs:
        e.pop("stepping", None)
    a = rows(evs)["a"]
    assert a.load.own_cores is None and a.load.own_dropped == 0 and load_text(a) == "~0.1 cores"
    json.dumps(summarize(evs).to_dict())  # the summary stays JSON
