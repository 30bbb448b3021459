"""The noisy-neighbour figure on a pinned session (control/sampler.py): other processes' load
on the cores the session may use, not on the whole machine."""

from __future__ import annotations

import psutil

from tuimon.control.sampler import Sampler


class _Own:
    def __init__(self, pct: float) -> None:
        self.pct = pct

    def cpu_percent(self, _interval):
        return self.pct


def foreign(system: dict, runs: dict, own: float = 10.0) -> float | None:
    sampler = Sampler.__new__(Sampler)
    sampler._own = _Own(own)
    return sampler._rest({"system": system, "runs": runs})


def residual(sampler, runs: dict, busy: float = 2.0) -> dict:
    return sampler._residual({"system": {"cores_allowed": 2, "allowed_busy": busy}, "runs": runs})


def test_only_the_allowed_cores_count():
    # 8 cores, the session pinned to 2 of them; 6 busy cores elsewhere are not its neighbours
    system = {"cpu_percent": 100.0, "cpu_count": 8, "cores_allowed": 2, "allowed_busy": 1.6}
    assert foreign(system, {"r": {"cpu_percent": 140.0}}) == 0.1  # 1.6 - 1.4 - 0.1
    # unpinned the machine's load is the session's business
    system = {"cpu_percent": 100.0, "cpu_count": 8, "cores_allowed": 8, "allowed_busy": 8.0}
    assert foreign(system, {"r": {"cpu_percent": 140.0}}) == 6.5


def test_no_figure_until_every_baseline():
    system = {"cpu_percent": 50.0, "cpu_count": 2, "cores_allowed": 2, "allowed_busy": None}
    assert foreign(system, {"r": {"cpu_percent": 100.0}}) is None
    system["allowed_busy"] = 1.0
    assert foreign(system, {"r": {"cpu_percent": None}}) is None
    assert foreign(system, {"r": {"cpu_percent": 100.0}}) == 0.0  # never below 0


def test_a_probe_that_tells_the_machine_only():
    # older samples (and fakes) carry the machine's share alone: its busy cores count
    assert foreign({"cpu_percent": 75.0, "cpu_count": 4}, {"r": {"cpu_percent": 100.0}}) == 1.9


def test_raising_own_process_gives_none():
    class Gone:
        def cpu_percent(self, _):
            raise psutil.NoSuchProcess(1)

    sampler = Sampler.__new__(Sampler)
    sampler._own = Gone()
    assert sampler._rest({"system": {"cores_allowed": 1, "allowed_busy": 1.0},
                                   "runs": {}}) is None


def test_what_tuimon_sizes_by_is_the_cores_it_may_use(monkeypatch):
    from tuimon import cores
    from tuimon.control.runs import Run
    from tuimon.control.schedule import startable
    from tuimon.runner import fix_defaults
    from tuimon.sessiondir.run_state import RunState

    monkeypatch.setattr("os.sched_getaffinity", lambda pid: {0, 1, 2, 3})
    monkeypatch.setattr("os.cpu_count", lambda: 64)
    assert cores.usable() == 4 and fix_defaults.workers() == min(4, fix_defaults.MAX_WORKERS)
    runs = {k: Run(k, None, state=RunState(k)) for k in ("a", "b")}
    assert startable("parallel", ["a", "b"], {}, runs) == (["a", "b"], 2)  # 4 cores / 2 runs


def test_a_period_in_which_a_run_ended_is_the_sessions_own_end_not_a_neighbour():
    """A run's process that ended in the period cannot be read for what it spent after the
    sample before (its exit, its compile workers' teardown): that rest is ``ending_cores``, and
    the period tells no neighbour's load (it read "~1.6 cores" of other processes on a quiet VM)."""
    sampler = Sampler.__new__(Sampler)
    sampler._own, sampler._alive = _Own(5.0), set()
    both = {"a": {"alive": True, "cpu_percent": 100.0}, "b": {"alive": True, "cpu_percent": 40.0}}
    assert residual(sampler, both, busy=1.5) == {"foreign_cores": 0.05}
    # b exited and was reaped: gone from the runs; the period's 1.6 cores are its end
    assert residual(sampler, {"a": both["a"]}, busy=2.0) == {
        "foreign_cores": None, "ending_cores": 0.95, "ended": ["b"]}
    assert residual(sampler, {"a": both["a"]}, busy=1.1) == {"foreign_cores": 0.05}  # then as ever
    # a run still asked about whose root is gone says so too
    gone = {"a": {"alive": False, "cpu_percent": None}}
    assert residual(sampler, gone, busy=0.6)["ended"] == ["a"]


def test_the_end_counts_as_the_sessions_own_load_on_a_run_that_stepped_through_it():
    from tuimon.analysis.stats.load import busy_sample, own_cores

    s = {"stepping": ["a"], "system": {"foreign_cores": None, "ending_cores": 0.9},
         "runs": {"a": {"cpu_percent": 100.0}}}
    assert own_cores(s, "a") == 0.9 and not busy_sample(s, {})


# /proc/stat with core 1 offline (SMT turned off leaves every other id offline): cores 0, 2, 3
STAT = """cpu  400 0 200 1400 0 0 0 0 0 0
cpu0 100 0 50 350 0 0 0 0 0 0
cpu2 200 0 100 200 0 0 0 0 0 0
cpu3 100 0 50 850 0 0 0 0 0 0
intr 12345 0 0
ctxt 999
"""


def test_cores_are_read_by_their_id_not_their_place_in_the_list():
    from tuimon.probes.host import parse_proc_stat

    got = parse_proc_stat(STAT, 100.0)
    assert sorted(got) == [0, 2, 3]
    assert got[2] == (3.0, 5.0)  # user + system busy, of user + system + idle
    assert got[3] == (1.5, 10.0)


def test_a_session_pinned_to_cores_2_and_3_reads_their_load_with_core_1_offline(monkeypatch):
    from tuimon.probes import host

    readings = iter([STAT, STAT.replace("cpu2 200 0 100 200", "cpu2 300 0 100 200")
                     .replace("cpu3 100 0 50 850", "cpu3 100 0 50 950")])
    monkeypatch.setattr(host, "per_core", lambda: host.parse_proc_stat(next(readings), 100.0))
    monkeypatch.setattr(host.cores, "allowed", lambda: [2, 3])
    probe = host.HostProbe()
    assert probe.sample({})["system"]["cores_allowed"] == 2
    system = probe.sample({})["system"]
    # core 2 busy the whole second, core 3 idle: one core, where the list's index 2 (core 3)
    # and a missing index 3 gave an idle core and no second reading
    assert system["cores_allowed"] == 2 and system["allowed_busy"] == 1.0
