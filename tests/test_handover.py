"""Issue 24: one of tuimon's runs starting or ending never loads the machine under another's
measured steps (the schedule waits: control/handover.py), and what tuimon's own runs load beside
a run's steps anyway counts as load, named as theirs (analysis/stats/load.py)."""

from __future__ import annotations

import json
import os
import sys
import time

from conftest import SCRIPTS, TEST_RECIPES, wait_for
from test_end_to_end import runs_of
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
from tuimon.settings import RunSettings
from tuimon.variants import Variant


def test_no_step_is_measured_while_another_variant_ends(tuimon, tmp_path):
    """Two variants of a script with 2 DataLoader workers whose end keeps two cores busy for
    1.5 s after tuimon ended it at --steps: joined by the script as it exits (after tuimon's
    atexit said it finished), or left running after it exited. The other variant takes no step
    from the first one's last step until the machine is quiet again."""
    done, work = tmp_path / "done", tmp_path / "work"
    done.mkdir()
    work.mkdir()
    # The helpers' end is written outside the script's directory (a write inside it would be
    # kept apart in the variant's own view of it: docs/scripts.md).
    proc, session = tuimon("run", "--headless", "--modes", "eager", "--set", "how=join,linger",
                           "--repeats", "1", "--steps", "24", "--turn", "0.3", "--interval", "0.25", "--",
                           sys.executable, str(SCRIPTS / "slow_exit.py"), "--how", "{how}",
                           "--exit-s", "1.5", "--done-dir", str(done), cwd=work)
    assert proc.returncode == 0, proc.stderr
    evs, by_run = runs_of(session)
    assert len(by_run) == 2
    for run, kinds in by_run.items():
        last = kinds[events.STEP][-1]["t"]
        if all(s["t"] <= last for other, theirs in by_run.items() if other != run
               for s in theirs[events.STEP]):
            continue  # it ended last: nothing stepped beside its end (its lingering helpers may
            # still be running, or be ended with the session, when tuimon returns)
        pid = kinds[events.RUN_STARTED][0]["pid"]
        # when its last helper process ended (time.time())
        quiet_at = {run: max(float(x) for x in (done / f"{pid}.done").read_text().split())}
        for other, theirs in by_run.items():
            if other == run:
                continue
            beside = [s for s in theirs[events.STEP]
                      if s["t"] > last and s["t"] - s["ms"] / 1000.0 < quiet_at[run]]
            assert not beside, (f"{other} stepped while {run} ended "
                                f"({last:.2f}..{quiet_at[run]:.2f}): {beside}")
    # Each still stepped to the end: the wait let the other go on once it was quiet.
    assert all(len(kinds[events.STEP]) == 24 for kinds in by_run.values())


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
        r = self.table.runs[run] = self.table.live[run] = Run(run, Variant("eager", "fp32"))
        r.child = FakeChild(time.monotonic() if started is None else started)
        return r

    def may_start(self) -> bool:
        self.table.queue[:] = ["next"]  # a run waits to start
        self.table.runs["next"] = Run("next", Variant("eager", "fp32"))
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
    a.ended = True  # a said it finished; its process still runs
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


def test_interleave_gives_no_turn_while_a_variant_still_builds(tuimon):
    """One variant builds for 2 s (its import, its model, its data): the other takes its first
    turn once both are ready."""
    proc, session = tuimon(str(TEST_RECIPES / "slow_steps.py"), "--headless", "--modes", "eager",
                           "--set", "build_s=0,2", "--set", "sleep_ms=5", "--steps", "20", "--repeats", "1",
                           "--no-probes")
    assert proc.returncode == 0, proc.stderr
    evs, by_run = runs_of(session)
    ready = max(next(e["t"] for e in kinds[events.PHASE] if e.get("turn"))
                for kinds in by_run.values())
    first = min(s["t"] - s["ms"] / 1000.0 for kinds in by_run.values() for s in kinds[events.STEP])
    assert first >= ready, f"a step began {ready - first:.2f} s before every variant was built"


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
