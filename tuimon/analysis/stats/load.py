"""Other processes' load while a run stepped (a noisy neighbour), from the probes' samples:
CPU cores the machine spent outside the session (``system.foreign_cores``, control/sampler.py)
and, on a GPU, other processes on the run's devices (``devices[].foreign``).

A run's figure is over the samples taken while it stepped in its steady state (outside its
pauses and turn waits: probe_stats picks them). Load on every run → the session says the
machine was busy; load that differs between a run and its baseline → the comparison is
unreliable, with the figures; ``--quiet-only`` → steps in a sample period with load are kept
out of the steady state.
"""

from __future__ import annotations

from tuimon.analysis.stats.rows import RunStats, SessionSummary, max_of, mean_of

BUSY_CORES = 0.5  # other processes using more than this much CPU: the machine is not the run's
DIFFERS_CORES = 0.5  # a baseline and a variant whose neighbours differ by more: not comparable
BUSY_SM = 10  # % SM of other processes on the run's GPU


def busy_sample(s: dict, v: dict) -> bool:
    """A sample period in which other processes loaded the run's CPU or GPU."""
    cores = s.get("system", {}).get("foreign_cores") or 0.0
    sm = max([(d.get("foreign") or {}).get("sm_util") or 0 for d in s.get("devices", [])
              if d.get("index") in v.get("gpus", [])], default=0)
    return cores > BUSY_CORES or sm > BUSY_SM


def foreign_stats(r: RunStats, mine: list[tuple[dict, dict]], quiet_only: bool = False) -> None:
    """``mine``: (sample, the run's values in it) over the run's stepping steady state; with
    --quiet-only, only its quiet periods count (the steps measured in the others are out)."""
    if quiet_only:
        mine = [(s, v) for s, v in mine if not busy_sample(s, v)]
    r.foreign_cores = mean_of([s.get("system", {}).get("foreign_cores") for s, _ in mine])
    on_gpu = [d.get("foreign") for s, v in mine for d in s.get("devices", [])
              if d.get("index") in v.get("gpus", []) and d.get("foreign")]
    r.foreign_gpu_sm = mean_of([f.get("sm_util") for f in on_gpu])
    r.foreign_gpu_mem = max_of([f.get("gpu_mem") for f in on_gpu])
    pids = sorted({p for f in on_gpu for p in f.get("pids", [])})
    r.foreign_gpu_pids = pids[:5]


def busy(r: RunStats) -> bool:
    return (r.foreign_cores or 0.0) > BUSY_CORES or (r.foreign_gpu_sm or 0) > BUSY_SM


def load_text(r: RunStats) -> str:
    """'other processes used ~1.0 core (GPU: pid 4242 at 35 %)'."""
    parts = []
    if r.foreign_cores is not None:
        parts.append(f"~{r.foreign_cores:.1f} core{'' if round(r.foreign_cores, 1) == 1 else 's'}")
    if r.foreign_gpu_pids:
        pids = ", ".join(str(p) for p in r.foreign_gpu_pids)
        sm = f" at {r.foreign_gpu_sm:.0f} %" if r.foreign_gpu_sm is not None else ""
        parts.append(f"GPU: pid {pids}{sm}")
    return " (".join(parts) + (")" if len(parts) > 1 else "")


def loads_differ(a: RunStats, b: RunStats) -> bool:
    """Their neighbours differed by enough to spoil comparing them (False when unknown)."""
    if a.foreign_cores is None or b.foreign_cores is None:
        return False
    return (abs(a.foreign_cores - b.foreign_cores) > DIFFERS_CORES
            or abs((a.foreign_gpu_sm or 0) - (b.foreign_gpu_sm or 0)) > BUSY_SM)


def load_gap(r: RunStats, base: RunStats) -> str | None:
    """How their neighbours differed, when by enough to spoil comparing ``r`` with ``base``."""
    if r is base or not loads_differ(r, base):
        return None
    return (f"other processes used {load_text(base)} during {base.label}'s steps, "
            f"{load_text(r)} during {r.label}'s")


def compare_load(r: RunStats, base: RunStats) -> None:
    """Mark ``r``'s comparison with ``base`` unreliable when their neighbours differed."""
    what = load_gap(r, base)
    if what is not None:
        r.distrust(what)
        r.load_differs = True


def session_busy(summary: SessionSummary, runs: list[RunStats]) -> None:
    dropped = sum(r.busy_dropped for r in runs)
    if dropped:
        summary.busy = (f"other processes loaded the machine during {dropped} steps; --quiet-only "
                        "kept them out of the steady state")
        return
    measured = [r for r in runs if r.median_ms and r.foreign_cores is not None]
    if measured and all(busy(r) for r in measured):
        worst = max(measured, key=lambda r: (r.foreign_cores or 0.0, r.foreign_gpu_sm or 0))
        summary.busy = (f"the machine was busy: other processes used {load_text(worst)} while these "
                        "steps ran; times are slower than on a quiet machine")


def busy_periods(samples: list[dict], run: str) -> list[tuple[float, float]]:
    """--quiet-only: the sample periods (start, end] in which ``run``'s neighbours were busy."""
    out, before = [], None
    for s in samples:
        t = s.get("t")
        v = s.get("runs", {}).get(run)
        if v is not None and before is not None and busy_sample(s, v):
            out.append((before, t))
        before = t
    return out
