"""Minor page faults per step: how often a run's steps map fresh memory. Two processes running
the same step can fault at very different rates (glibc's adaptive mmap threshold), which makes
their comparison measure their allocators as much as their modes
(docs/measuring.md#page-faults-and---pin-malloc). The rate comes from the cumulative ``minflt``
of ``memory`` events, over windows of measured steady steps only."""

from __future__ import annotations

import statistics
from collections import deque

from tuimon.analysis.stats.point import Point, point
from tuimon.analysis.stats.rows import RunStats

# A fault's cost assumed when weighing a difference: between the 0.75 µs a fault of a step that
# writes 64 MiB of fresh pages (tests/recipes/alloc_each_step.py) and the 3.8 µs a fault of timm
# resnet18's steps measured on this project's VM (bench/RESULTS.md).
FAULT_US = 2.0
DIFFERS = 0.05  # a fault-rate gap worth more than this share of the baseline's step: unreliable
WINDOWS = 512  # rates kept per run (the live view's bound)


class FaultTrack:
    """One run's flush windows: (faults so far, steps so far, measured steps so far) at each
    ``memory`` event, and the rate of every window that held measured steady steps only."""

    def __init__(self) -> None:
        self.last: tuple[int, int, int] | None = None
        self.rates: deque = deque(maxlen=WINDOWS)

    def mark(self, minflt: int | None, steps: int, measured: int) -> None:
        if minflt is None:
            return
        if self.last is not None:
            faults, before, before_measured = self.last
            n = steps - before
            if n > 0 and measured - before_measured == n and minflt >= faults:
                self.rates.append((minflt - faults) / n)
        self.last = (minflt, steps, measured)

    def per_step(self) -> float | None:
        return statistics.median(self.rates) if self.rates else None

def faults_gap(r: RunStats, base: RunStats, pinned: bool | None = None) -> Point | None:
    """How their fault rates differed, when by more than DIFFERS of a step (at FAULT_US a
    fault): enough to spoil comparing ``r`` with ``base``."""
    if (r is base or r.load.faults_per_step is None or base.load.faults_per_step is None
            or not base.timing.median_ms):
        return None
    gap_ms = abs(r.load.faults_per_step - base.load.faults_per_step) * FAULT_US / 1000.0
    if gap_ms <= DIFFERS * base.timing.median_ms:
        return None
    # ``pinned``: every run had the same glibc thresholds (--pin-malloc), and they differ all the same
    return point("faults_differ", base=base.label, base_rate=base.load.faults_per_step, label=r.label,
                 rate=r.load.faults_per_step, gap_ms=gap_ms, fault_us=FAULT_US, pinned=bool(pinned))

