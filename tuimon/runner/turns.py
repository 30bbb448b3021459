"""When a run's turn ends in the interleaved schedule: after a fixed number of steps
(``--turn-steps``), or once it has stepped for ``--turn`` seconds, counted from its first step
after the turn began and restarted by a step that compiled (a compile is not a turn). With
``--steps`` known, a turn holds at most a quarter of them, and with ``--duration`` it lasts at
most a quarter of it, so every variant gets at least four turns however slow its steps are.

A rank of a torchrun job decides none of this itself (its ranks could end a turn at different
steps, and a rank paused one step early leaves the others waiting inside a collective): it
waits for its first turn (``first_only``) and the supervisor ends each turn for every rank at
the same step (``pause-at S turn``, runner/control_lines.py)."""

from __future__ import annotations

import math
import time

MIN_TURNS = 4


class Turns:
    def __init__(self, steps_per_turn: int = 0, seconds: float = 0.0, steps: int | float | None = None,
                 duration: float | None = None, first_only: bool = False) -> None:
        self.first_only = first_only
        self.steps = int(steps_per_turn or 0)
        self.seconds = float(seconds or 0.0)
        if duration and self.seconds:
            self.seconds = min(self.seconds, duration / MIN_TURNS)
        if steps is not None and steps != float("inf") and not self.steps:
            self.cap: int | None = max(1, math.ceil(steps / MIN_TURNS))
        else:
            self.cap = None
        self.on = bool(self.steps or self.seconds or first_only)
        self.first = 0
        self.t0 = 0.0

    def begin(self, i: int) -> None:
        """The turn starts before step ``i``."""
        self.first = i
        self.t0 = time.perf_counter()

    def compiled(self) -> None:
        self.t0 = time.perf_counter()

    def next_step(self) -> int | float:
        """The step count at which the turn ends by its steps (infinite: by time, or never)."""
        if self.first_only:
            return math.inf
        if self.steps:
            return self.first + self.steps
        return self.first + self.cap if self.cap is not None else math.inf

    def next_time(self) -> float:
        """When (perf_counter) the turn ends by its seconds (infinite: by steps, or never)."""
        if self.first_only or self.steps or not self.seconds:
            return math.inf
        return self.t0 + self.seconds

    def over(self, i: int) -> bool:
        """``i`` steps done: is the turn over?"""
        n = i - self.first
        if n <= 0 or self.first_only:
            return False
        if self.steps:
            return n >= self.steps
        if self.cap is not None and n >= self.cap:
            return True
        return time.perf_counter() - self.t0 >= self.seconds
