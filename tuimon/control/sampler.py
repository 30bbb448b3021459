"""Samples the probes on a fixed period in a thread of the supervisor, never in a runner.

Each tick becomes one ``sample`` event (system, per-run host and GPU values, devices; for a
torchrun job also each rank's, under the run's ``ranks``: its own process tree, and the GPUs
NVML sees its pid on), and ``stepping``: the runs that stepped through the whole period (the
supervisor says which), so analysis can tell what the session's other runs loaded beside their
steps. What cannot be measured is said once in a ``probe_info`` event; a new alert for a run
becomes one ``warning`` event (said again only after it cleared). Ticks are scheduled from the
previous deadline, so the period does not drift with the time a sample takes; ``poke()`` (a
turn changed hands) takes a sample at once, so a turn's periods start with it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import psutil

from tuimon import events
from tuimon.probes import GpuProbe, HostProbe, run_alerts, system_alerts
from tuimon.probes.rapl import RaplProbe

HOST_KEYS = ("cpu_percent", "cpu_time_s", "rss", "descendants")
MIN_INTERVAL = 0.2


class Sampler:
    def __init__(self, interval: float, pids: Callable[[], dict[str, int]],
                 deliver: Callable[[list[dict]], None], gpu: GpuProbe | None = None,
                 host: HostProbe | None = None,
                 stepping: Callable[[float | None], set[str]] | None = None,
                 ranks: Callable[[], dict[str, dict[int, int]]] | None = None,
                 rapl: RaplProbe | None = None) -> None:
        """``stepping(since)``: the runs stepping without a break since that time.monotonic()
        (not building, compiling, paused or waiting for their turn); only they can overuse their
        share of the cores (None: every run, and the samples say no ``stepping``)."""
        self._stepping = stepping
        self._ranks = ranks  # run -> {rank: pid} of the torchrun jobs' ranks
        self.interval = max(MIN_INTERVAL, interval)
        self._pids = pids
        self._deliver = deliver
        self._gpu = gpu
        self._host = host or HostProbe()
        self._rapl = rapl  # CPU energy (RAPL), made on the sampling thread with the GPU's probe
        self._active: set[tuple[str | None, str]] = set()
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._last: float | None = None  # time.monotonic() of the last tick
        self._thread = threading.Thread(target=self._loop, name="tuimon-sampler", daemon=True)
        self._said_gpu = False
        self._own = psutil.Process()
        self._alive: set[str] = set()  # the runs whose process was alive at the last tick
        self._own.cpu_percent(None)  # the baseline of this process's own CPU share

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)

    def _loop(self) -> None:
        deadline = time.monotonic()
        while not self._stop.is_set():
            self._deliver(self.tick())
            deadline += self.interval
            now = time.monotonic()
            if deadline < now:  # a slow sample: skip the missed ticks rather than burst
                deadline = now + self.interval
            if self._wake.wait(deadline - now):  # poked: the next period starts now
                self._wake.clear()
                deadline = time.monotonic()

    def poke(self) -> None:
        """A turn changed hands: sample now (from any thread), so a period starts with it."""
        self._wake.set()

    def tick(self) -> list[dict]:
        if self._gpu is None:
            self._gpu = GpuProbe()  # NVML init on the sampling thread, off the caller's
        if self._rapl is None:
            self._rapl = RaplProbe()
        since, self._last = self._last, time.monotonic()
        pids = self._pids()
        stepping = self._stepping(since) & set(pids) if self._stepping else None
        jobs = self._ranks() if self._ranks else {}
        ranks = {f"{run}#{rank}": (run, rank, pid) for run, rp in jobs.items() if run in pids
                 for rank, pid in rp.items()}
        host = self._host.sample({**pids, **{key: pid for key, (_, _, pid) in ranks.items()}})
        gpu = self._gpu.sample({key: self._host.tree_pids(key) for key in [*pids, *ranks]})
        batch = self._info(gpu)
        of_ranks = {key: host["runs"].pop(key) for key in ranks}
        runs = {}
        for run, h in host["runs"].items():
            runs[run] = _values(h, gpu["runs"].get(run, {}))
        for key, (run, rank, _) in ranks.items():
            runs[run].setdefault("ranks", {})[str(rank)] = _values(of_ranks[key],
                                                                    gpu["runs"].get(key, {}))
        system = {**host["system"], **self._residual(host)}
        if self._rapl.available:  # the CPU packages' energy so far, µJ (probes/rapl.py)
            system["energy_uj"] = self._rapl.read()
        sample = events.make(events.SAMPLE, system=system, runs=runs, devices=gpu["devices"])
        if stepping is not None:
            sample["stepping"] = sorted(stepping)
        batch.append(sample)
        batch += self._warnings(host, gpu, runs, stepping)
        return batch

    def _residual(self, host: dict) -> dict:
        """``foreign_cores``: the cores spent on other processes than the session's (its runs'
        trees and this supervisor) over the last period, on the cores the session may run on
        (probes/host.py: a pinned session is not disturbed by load on other cores): a noisy
        neighbour. None until every figure has its baseline (the first sample of a process).
        In a period in which a run's process ended, what it spent after the last sample can no
        longer be read (it is gone, its Inductor compile workers' teardown with it): the rest of
        that period's load is the session's own ending, ``ending_cores``, not a neighbour's."""
        alive = {run for run, h in host["runs"].items() if h.get("alive", True)}
        ended = sorted(self._alive - alive)
        self._alive = alive
        rest = self._rest(host)
        if ended and rest is not None:
            return {"foreign_cores": None, "ending_cores": rest, "ended": ended}
        return {"foreign_cores": rest}

    def _rest(self, host: dict) -> float | None:
        system = host["system"]
        busy = system.get("allowed_busy")
        if busy is None and "cores_allowed" not in system:  # a probe that tells the machine only
            pct, cpus = system.get("cpu_percent"), system.get("cpu_count")
            busy = None if pct is None or not cpus else pct / 100.0 * cpus
        runs = [h.get("cpu_percent") for h in host["runs"].values() if h.get("alive", True)]
        try:
            own = self._own.cpu_percent(None)
        except psutil.Error:
            own = None
        if busy is None or own is None or any(c is None for c in runs):
            return None
        return round(max(0.0, busy - (sum(runs) + own) / 100.0), 2)

    def _info(self, gpu: dict) -> list[dict]:
        out = []
        if not self._said_gpu:
            self._said_gpu = True
            out.append(events.make(events.PROBE_INFO, gpu_available=gpu["available"],
                                   reason=gpu["reason"], rapl=self._rapl and self._rapl.reason,
                                   devices=[{k: d.get(k) for k in ("index", "name", "uuid")}
                                            for d in gpu["devices"]]))
        if gpu["unsupported_new"]:
            out.append(events.make(events.PROBE_INFO, unsupported=gpu["unsupported_new"]))
        return out

    def _warnings(self, host: dict, gpu: dict, runs: dict, stepping: set[str] | None) -> list[dict]:
        now: set[tuple[str | None, str]] = {(None, text) for text in system_alerts(host["system"])}
        devices = {d["index"]: d for d in gpu["devices"]}
        # the fair share is of the cores the runs may use (a pinned session: its cpuset)
        cpus = host["system"].get("cores_allowed") or host["system"].get("cpu_count") or 1
        # Only the runs stepping now share the cores: under interleave that is the one holding
        # the turn, with the machine to itself; a compile's worker processes are no overuse.
        stepping = set(runs) if stepping is None else stepping & set(runs)
        for run, values in runs.items():
            tree = host["runs"][run] if run in stepping else None
            for device in [devices.get(i) for i in values["gpus"]] or [None]:
                for text in run_alerts(device, tree, cpu_count=cpus,
                                       concurrent_runs=max(1, len(stepping))):
                    now.add((run, text))
        new = now - self._active
        self._active = now
        return [events.make(events.WARNING, run, text=text) for run, text in sorted(new, key=str)]


def _values(host: dict, gpu: dict) -> dict:
    return {**{k: host.get(k) for k in HOST_KEYS}, "gpu_mem": gpu.get("gpu_mem"),
            "sm_util": gpu.get("sm_util"), "gpus": [d["index"] for d in gpu.get("per_device", [])]}
