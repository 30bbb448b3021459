"""A rank's time in FSDP2's collectives over the job's steady steps (the runner's ``collectives``
events: runner/fsdp_waits.py): milliseconds a step in all-gathers and in reduce-scatters, on
average over the windows that start in the steady state (a window holding the compile's steps
is no figure of the steady ones), as the garbage collector's (gc_pauses.py)."""

from __future__ import annotations

KINDS = ("all_gather", "reduce_scatter")


class CollectiveTrack:
    """One rank's windows: (first step, end step, {kind: seconds})."""

    def __init__(self) -> None:
        self.windows: list[tuple[int, int, dict]] = []

    def add(self, e: dict) -> None:
        first, end = e.get("steps") or (0, 0)
        self.windows.append((int(first), int(end), dict(e.get("seconds") or {})))

    def per_step(self, steady_from: int | None) -> dict[str, float] | None:
        """{kind: ms a step} over the windows from the steady state on; None: no such window
        (not measured, or the run ended inside its warm-up's window)."""
        kept = [w for w in self.windows if steady_from is not None and w[0] >= steady_from]
        steps = sum(end - first for first, end, _ in kept)
        if not steps:
            return None
        return {k: round(sum(float(w[2].get(k) or 0.0) for w in kept) * 1000.0 / steps, 3)
                for k in KINDS}
