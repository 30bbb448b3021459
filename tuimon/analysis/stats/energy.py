"""Energy where the machine tells it (docs/measuring.md#energy): joules per step and per run,
from the probes' samples (NVML's counter or power × time on a GPU, RAPL on a CPU). The counters
count every process on the device, so a period counts for a run only when it stepped alone.

Codes of ``energy_why`` (report/memory_text.py words them): no_sensor, rapl (its reason),
no_samples, shared (it never stepped alone), no_steady, which_gpu (NVML did not see its process
and the machine has several GPUs, or none NVML could read)."""

from __future__ import annotations

from bisect import bisect_right
from itertools import accumulate

from tuimon.analysis.stats.point import point
from tuimon.analysis.stats.records import Energy
from tuimon.analysis.stats.rows import RunStats
from tuimon.analysis.stats.steady_state import is_measured, steady_window
from tuimon.sessiondir.run_state import RunState

FOREIGN_CORES = 0.5  # other processes' cores over a period that make RAPL's figure theirs too


def alone(run: str, runs: dict[str, RunState]) -> tuple[float, float] | None:
    """When ``run`` lived (its run_started to its first end; inf: alive still), if no other run
    of the session lived beside it; None otherwise, or before it started."""
    mine = _lived(runs.get(run))
    if mine is None:
        return None
    for other, s in runs.items():
        theirs = _lived(s)
        if other != run and theirs is not None and theirs[0] < mine[1] and theirs[1] > mine[0]:
            return None
    return mine


def _lived(s: RunState | None) -> tuple[float, float] | None:
    if s is None or s.ranks or s.started is None:  # a job's lives are its ranks'
        return None
    return s.started["t"], s.ended_t if s.ended_t is not None else float("inf")


def energy_stats(r: RunStats, run_steps: list[dict], samples: list[dict], runs: dict[str, RunState],
                 rapl_reason: str | None = None) -> Energy:
    """``r``'s Energy: its source, joules per steady step and per run, or why not."""
    mine = [s for s in samples if r.run in s.get("runs", {})]
    on_gpu = (r.device or "").startswith("cuda")
    gpus = sorted({i for s in mine for i in s["runs"][r.run].get("gpus", [])}) if on_gpu else []
    if on_gpu and not gpus:  # NVML did not see its pid (a container's own pid namespace)
        seen = {d.get("index") for s in mine for d in s.get("devices", [])}
        if len(seen) != 1:
            return Energy(energy_why=point("which_gpu", devices=len(seen)))
        gpus = sorted(seen)  # the machine's one GPU is its
    reader, source = _reader(mine, gpus, on_gpu)
    if reader is None:
        if not on_gpu and rapl_reason:
            return Energy(energy_why=point("rapl", reason=rapl_reason))
        return Energy(energy_why=point("no_sensor" if mine or not samples else "no_samples",
                                       device="gpu" if on_gpu else "cpu"))
    found: dict = {"energy_source": source}
    span = alone(r.run, runs)
    if span is not None:
        life = [s for s in mine if span[0] <= s["t"] <= span[1]]
        if len(life) >= 2 and all(_quiet(s, gpus, on_gpu) for s in life[1:]):
            found["joules_run"] = _joules(reader, life)
    window = steady_window(run_steps)
    if window is None:
        return Energy(**found, energy_why=point("no_steady"))
    joules = seconds = 0.0
    steps = 0
    ordered = sorted(samples, key=lambda s: s["t"])
    ends = sorted((s["t"], is_measured(s)) for s in run_steps)
    times = [t for t, _ in ends]
    apart = list(accumulate((0 if ok else 1 for _, ok in ends), initial=0))  # kept apart, so far
    for a, b in zip(ordered, ordered[1:], strict=False):
        if a["t"] < window[0] or b["t"] > window[1] or not _alone(r.run, a, b, gpus, on_gpu):
            continue
        lo, hi = bisect_right(times, a["t"]), bisect_right(times, b["t"])  # steps ending in (a, b]
        if hi == lo or apart[hi] != apart[lo]:  # none, or one kept apart (a compile, a capture)
            continue
        e = _joules(reader, [a, b])
        if e is None:
            continue
        joules += e
        seconds += b["t"] - a["t"]
        steps += hi - lo
    if not steps:
        return Energy(**found, energy_why=point("shared"))
    return Energy(**found, joules_per_step=joules / steps, energy_steps=steps, energy_s=round(seconds, 3))


def _reader(samples: list[dict], gpus: list[int], on_gpu: bool):
    """(a function of a sample: its cumulative joules, or None; the source's name), or (None,
    None) where no sample says anything."""
    if on_gpu:
        def counter(s):
            values = [d.get("energy_mj") for d in s.get("devices", []) if d.get("index") in gpus]
            return sum(values) / 1000.0 if values and None not in values else None

        def power(s):
            values = [d.get("power_w") for d in s.get("devices", []) if d.get("index") in gpus]
            return sum(values) if values and None not in values else None

        if gpus and any(counter(s) is not None for s in samples):
            return counter, "nvml-counter"
        if gpus and any(power(s) is not None for s in samples):
            return _Power(power), "nvml-power"
        return None, None

    def rapl(s):
        value = s.get("system", {}).get("energy_uj")
        return None if value is None else value / 1e6

    if any(rapl(s) is not None for s in samples):
        return rapl, "rapl"
    return None, None


class _Power:
    """Power × time: the energy between two samples at the mean of their power draws."""

    def __init__(self, watts) -> None:
        self.watts = watts


def _joules(reader, span: list[dict]) -> float | None:
    """Joules over a run of consecutive samples (None where one of them could not say)."""
    if isinstance(reader, _Power):
        total = 0.0
        for a, b in zip(span, span[1:], strict=False):
            pa, pb = reader.watts(a), reader.watts(b)
            if pa is None or pb is None:
                return None
            total += (pa + pb) / 2.0 * (b["t"] - a["t"])
        return total
    first, last = reader(span[0]), reader(span[-1])
    if first is None or last is None or last < first:  # a counter reset (driver reload)
        return None
    return last - first


def _alone(run: str, a: dict, b: dict, gpus: list[int], on_gpu: bool) -> bool:
    """The period a→b ran ``run`` alone: its only stepping run, nobody else busy on its device."""
    if run not in a.get("runs", {}) or run not in b.get("runs", {}):
        return False
    stepping = b.get("stepping")
    if stepping is not None:
        if stepping != [run]:
            return False
    elif set(b["runs"]) != {run}:
        return False
    return _quiet(b, gpus, on_gpu)


def _quiet(b: dict, gpus: list[int], on_gpu: bool) -> bool:
    """No other process busy on the device over the period ending at sample ``b``."""
    if on_gpu:
        for d in b.get("devices", []):
            foreign = d.get("foreign") or {}
            if d.get("index") in gpus and (foreign.get("sm_util") or 0) > 0:
                return False
        return True
    return (b.get("system", {}).get("foreign_cores") or 0.0) <= FOREIGN_CORES


def combine_energy(group: list[RunStats]) -> Energy:
    """A --repeats variant's: the median joules per step of its processes that have one (their
    steps summed), its source; per run only for a single process."""
    have = sorted((r.energy for r in group if r.energy.joules_per_step is not None),
                  key=lambda e: e.joules_per_step or 0.0)  # None: left out above
    if not have:
        return group[0].energy if group else Energy()
    mid = have[len(have) // 2]
    return Energy(energy_source=mid.energy_source, joules_per_step=mid.joules_per_step,
                  energy_steps=sum(e.energy_steps for e in have),
                  energy_s=round(sum(e.energy_s or 0.0 for e in have), 3),
                  joules_run=mid.joules_run if len(group) == 1 else None)
