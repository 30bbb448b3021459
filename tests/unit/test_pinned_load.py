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
    return sampler._foreign_cores({"system": system, "runs": runs})


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
    assert sampler._foreign_cores({"system": {"cores_allowed": 1, "allowed_busy": 1.0},
                                   "runs": {}}) is None


def test_what_tuimon_sizes_by_is_the_cores_it_may_use(monkeypatch):
    from tuimon import cores
    from tuimon.control.runs import Run
    from tuimon.control.schedule import startable
    from tuimon.runner import fix_defaults

    monkeypatch.setattr("os.sched_getaffinity", lambda pid: {0, 1, 2, 3})
    monkeypatch.setattr("os.cpu_count", lambda: 64)
    assert cores.usable() == 4 and fix_defaults.workers() == min(4, fix_defaults.MAX_WORKERS)
    runs = {k: Run(k, None) for k in ("a", "b")}
    assert startable("parallel", ["a", "b"], {}, runs) == (["a", "b"], 2)  # 4 cores / 2 runs
