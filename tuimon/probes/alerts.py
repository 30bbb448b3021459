"""Warnings derived from probe samples. Pure functions over the dicts that `host.py` and
`gpu.py` produce (see their docstrings for keys); no psutil or NVML here, so the same rules
run live and on a replayed session.

Each function returns a list of human-readable warning strings (empty when all is well); a
missing value (None / n/a) never alerts.
"""

from __future__ import annotations

from tuimon import events

BENIGN_REASONS = events.BENIGN_THROTTLE  # clock-event reasons that are no slowdown worth a warning


def throttle_alerts(device: dict | None, benign: frozenset[str] = BENIGN_REASONS) -> list[str]:
    device = device or {}
    reasons = device.get("throttle_reasons") or []
    active = [r for r in reasons if r not in benign]
    if not active:
        return []
    return [f"GPU {device.get('index')} throttling: {', '.join(active)}"]


def memory_alerts(device: dict | None, limit: float = 0.95) -> list[str]:
    device = device or {}
    used, total = device.get("mem_used"), device.get("mem_total")
    if not used or not total or used <= limit * total:
        return []
    return [
        f"GPU {device.get('index')} memory {used / total:.0%} of "
        f"{total / 2**30:.1f} GiB (> {limit:.0%})"
    ]


def cpu_share_alerts(
    host_run: dict | None, cpu_count: int, concurrent_runs: int, factor: float = 1.5
) -> list[str]:
    """A tree using more than factor x its fair share (cpu_count / concurrent_runs cores)."""
    pct = (host_run or {}).get("cpu_percent")
    if pct is None or cpu_count <= 0:
        return []
    share = cpu_count / max(concurrent_runs, 1)
    cores = pct / 100
    if cores <= factor * share:
        return []
    return [
        f"process tree uses {cores:.1f} cores, {cores / share:.1f}x its share of "
        f"{share:g} ({cpu_count} cores / {max(concurrent_runs, 1)} runs)"
    ]


def system_alerts(system: dict | None, mem_limit: float = 0.95) -> list[str]:
    used, total = (system or {}).get("mem_used"), (system or {}).get("mem_total")
    if not used or not total or used <= mem_limit * total:
        return []
    return [f"host memory {used / total:.0%} used (> {mem_limit:.0%})"]


def run_alerts(
    device: dict | None,
    host_run: dict | None,
    *,
    cpu_count: int,
    concurrent_runs: int,
    cpu_factor: float = 1.5,
    mem_limit: float = 0.95,
    benign: frozenset[str] = BENIGN_REASONS,
) -> list[str]:
    """All warnings for one run: its device (may be None: no GPU) and its host tree."""
    return (
        throttle_alerts(device, benign)
        + memory_alerts(device, mem_limit)
        + cpu_share_alerts(host_run, cpu_count, concurrent_runs, cpu_factor)
    )
