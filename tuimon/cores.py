"""The cores this process may run on: its CPU affinity (taskset, numactl, a container's cpuset),
which every process it starts inherits; the machine's count where affinity is unknown. What
tuimon sizes by (a parallel schedule's threads, a budget's share, loader workers), never the
machine's count: a session pinned to 4 of 64 cores has 4."""

from __future__ import annotations

import os


def allowed() -> list[int]:
    """The ids of the cores this process may run on, sorted."""
    try:
        return sorted(os.sched_getaffinity(0)) or list(range(os.cpu_count() or 1))
    except (AttributeError, OSError):  # no affinity on this platform: every core
        return list(range(os.cpu_count() or 1))


def usable() -> int:
    return len(allowed())
