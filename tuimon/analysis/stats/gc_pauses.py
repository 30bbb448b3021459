"""Python's garbage collector in a run's steady steps (the runner's ``gc`` events:
runner/gc_pauses.py): milliseconds it paused a step, on average, and its collections per 100
steps. A collection pauses whatever step it falls in; what it costs the run is their mean, not a
median's (most steps hold none)."""

from __future__ import annotations


class GcTrack:
    """One run's gc windows: (first step, end step, collections, seconds)."""

    def __init__(self) -> None:
        self.windows: list[tuple[int, int, int, float]] = []

    def add(self, e: dict) -> None:
        first, end = e.get("steps") or (0, 0)
        self.windows.append((int(first), int(end), int(e.get("collections") or 0),
                             float(e.get("seconds") or 0.0)))

    def per_step(self, steady_from: int | None) -> tuple[float | None, float | None]:
        """(ms a step, collections per 100 steps) over the windows from the steady state on;
        (None, None): not measured, or no window past the warm-up (a window holding the
        compile's collections is no figure of the steady steps)."""
        kept = [w for w in self.windows if steady_from is not None and w[0] >= steady_from]
        steps = sum(end - first for first, end, _, _ in kept)
        if not steps:
            return None, None
        seconds = sum(w[3] for w in kept)
        return round(seconds * 1000.0 / steps, 4), round(100.0 * sum(w[2] for w in kept) / steps, 2)
