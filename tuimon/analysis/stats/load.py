"""Other processes' load while a run stepped in its steady state (docs/measuring.md#a-busy-machine):
cores spent outside the session, other processes on the run's GPUs, and the session's other
runs (tuimon's own load; not counted under ``--schedule parallel``, which asked for it). Load on
every run makes the session busy; load that differs from the baseline's makes a comparison
unreliable. Steps that met the session's own runs are kept out when they are few
(``OWN_DROP_SHARE``)."""

from __future__ import annotations

from dataclasses import replace

from tuimon.analysis.stats.point import Point, point
from tuimon.analysis.stats.records import Load
from tuimon.analysis.stats.rows import RunStats, max_of, mean_of

BUSY_CORES = 0.5  # other processes using more than this much CPU: the machine is not the run's
DIFFERS_CORES = 0.5  # a baseline and a variant whose neighbours differ by more: not comparable
BUSY_SM = 10  # % SM of other processes on the run's GPU
OWN_DROP_SHARE = 0.1  # steps that met the session's other runs' load: kept out when this few
OWN_NAMED = 0.05  # cores of the session's own other runs worth naming in a load's words


def busy_sample(s: dict, v: dict) -> bool:
    """A sample period in which other processes loaded the run's CPU or GPU."""
    cores = s.get("system", {}).get("foreign_cores") or 0.0
    sm = max([(d.get("foreign") or {}).get("sm_util") or 0 for d in s.get("devices", [])
              if d.get("index") in v.get("gpus", [])], default=0)
    return cores > BUSY_CORES or sm > BUSY_SM


def own_cores(s: dict, run: str) -> float | None:
    """Cores the session's other runs used in a sample period ``run`` stepped through (None: it
    did not, or the sample says nothing of it)."""
    if run not in (s.get("stepping") or ()):
        return None
    # and a run that ended in the period: what it spent after the sample before (the sampler's
    # ``ending_cores``: a process gone cannot be read, so the period's rest is its end)
    ending = s.get("system", {}).get("ending_cores") or 0.0
    others = sum((v.get("cpu_percent") or 0.0) for k, v in s.get("runs", {}).items() if k != run)
    return others / 100.0 + ending


def own_busy(s: dict, run: str) -> bool:
    return (own_cores(s, run) or 0.0) > BUSY_CORES


def foreign_load(run: str, load: Load, mine: list[tuple[dict, dict]], quiet_only: bool = False,
                 own: bool = True) -> Load:
    """``load`` (what the run's steps met: ``own_dropped``) with the other processes' load while
    ``run`` stepped. ``mine``: (sample, the run's values in it) over its stepping steady state; with
    --quiet-only, only its quiet periods count (the steps measured in the others are out), and
    without it only the periods whose steps were kept (stats/steady_state.py). ``own``: count
    the session's other runs (False under --schedule parallel)."""
    if quiet_only:
        mine = [(s, v) for s, v in mine if not busy_sample(s, v) and not (own and own_busy(s, run))]
    elif own and load.own_dropped:
        mine = [(s, v) for s, v in mine if not own_busy(s, run)]
    on_gpu = [d.get("foreign") for s, v in mine for d in s.get("devices", [])
              if d.get("index") in v.get("gpus", []) and d.get("foreign")]
    return replace(load, foreign_cores=mean_of([s.get("system", {}).get("foreign_cores") for s, _ in mine]),
                   own_cores=mean_of([own_cores(s, run) for s, _ in mine]) if own else None,
                   foreign_gpu_sm=mean_of([f.get("sm_util") for f in on_gpu]),
                   foreign_gpu_mem=max_of([f.get("gpu_mem") for f in on_gpu]),
                   foreign_gpu_pids=sorted({p for f in on_gpu for p in f.get("pids", [])})[:5])


def load_cores(r: RunStats) -> float | None:
    """Every other process's CPU while it stepped: outside the session and the session's other
    runs (None: unknown)."""
    if r.load.foreign_cores is None and r.load.own_cores is None:
        return None
    return (r.load.foreign_cores or 0.0) + (r.load.own_cores or 0.0)


def busy(r: RunStats) -> bool:
    return (load_cores(r) or 0.0) > BUSY_CORES or (r.load.foreign_gpu_sm or 0) > BUSY_SM


def load_figures(r: RunStats) -> dict:
    """Other processes' load while it stepped, for its words (report/load_text.py): every other
    process's cores, the share that was the session's own other runs (named only from 0.05
    core), and on its GPU the other processes and their SM %."""
    return {"cores": load_cores(r), "own": r.load.own_cores if (r.load.own_cores or 0.0) >= OWN_NAMED
            else None,
            "pids": list(r.load.foreign_gpu_pids), "sm": r.load.foreign_gpu_sm}


def own_load(steps: int, cores: float, dropped: bool) -> dict:
    """The steps that met the session's other runs' load, and whether they were kept out."""
    return {"steps": steps, "cores": cores, "dropped": dropped, "share": OWN_DROP_SHARE}


def loads_differ(a: RunStats, b: RunStats) -> bool:
    """Their neighbours differed by enough to spoil comparing them (False when unknown)."""
    la, lb = load_cores(a), load_cores(b)
    if la is None or lb is None:
        return False
    return (abs(la - lb) > DIFFERS_CORES
            or abs((a.load.foreign_gpu_sm or 0) - (b.load.foreign_gpu_sm or 0)) > BUSY_SM)


def load_gap(r: RunStats, base: RunStats) -> Point | None:
    """How their neighbours differed, when by enough to spoil comparing ``r`` with ``base``."""
    if r is base or not loads_differ(r, base):
        return None
    return point("load_differs", base=base.label, base_load=load_figures(base), label=r.label,
                 load=load_figures(r))


def session_busy(runs: list[RunStats]) -> Point | None:
    """Every run stepped beside other processes' load (``busy``, with the worst run's load), or
    --quiet-only kept the steps they met out (``busy_dropped``); None when neither."""
    dropped = sum(r.load.busy_dropped for r in runs)
    if dropped:
        return point("busy_dropped", steps=dropped)
    measured = [r for r in runs if r.timing.median_ms and r.load.foreign_cores is not None]
    if measured and all(busy(r) for r in measured):
        worst = max(measured, key=lambda r: (load_cores(r) or 0.0, r.load.foreign_gpu_sm or 0))
        return point("busy", load=load_figures(worst))
    return None


def busy_periods(samples: list[dict], run: str) -> list[tuple[float, float]]:
    """--quiet-only: the sample periods (start, end] in which ``run``'s neighbours were busy."""
    out: list[tuple[float, float]] = []
    before: float | None = None
    for s in samples:
        t = s["t"]  # every event has its time (events.make)
        v = s.get("runs", {}).get(run)
        if v is not None and before is not None and busy_sample(s, v):
            out.append((before, t))
        before = t
    return out


def own_periods(samples: list[dict], run: str) -> list[tuple[float, float, float]]:
    """The sample periods (start, end, cores] in which the session's other runs used more than
    ``BUSY_CORES`` while ``run`` stepped through them."""
    out: list[tuple[float, float, float]] = []
    before: float | None = None
    for s in samples:
        t = s["t"]
        cores = own_cores(s, run) if before is not None else None
        if before is not None and cores is not None and cores > BUSY_CORES:  # own_busy's test
            out.append((before, t, cores))
        before = t
    return out
