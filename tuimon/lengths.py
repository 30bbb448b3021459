"""How long each process of a variant runs when it runs in several (``--repeats K``).

The first round's process runs **the whole length asked for** (``--steps N``, ``--duration D``,
or a recipe's own steps), so whatever a script does later is reached as it would be without
tuimon: the end of an epoch, its validation pass, a checkpoint it saves and later reads, the last
short batch's recompile, its own code after the loop. Cut in K parts, none of that was reached
(issue 33.7). Rounds 2..K each run a K-th of it: enough for a steady state whose median measures
the spread between processes (analysis/stats/noise.py), at the length every process ran before.

A leaf: the CLI asks here, and the run's settings (tuimon/settings.py ``Length.this_process``)
for the supervisor, the recipe runner and a script's hooks.
"""

from __future__ import annotations

import math

FULL_ROUND = 1  # the round whose process runs the whole length


def process_length(steps: int | None, duration: float | None, repeats: int, round_: int | None,
                   ) -> tuple[int | None, float | None]:
    """(steps, duration) one process runs: the length asked for in round 1 (or with one
    process), a K-th of it in a spread round."""
    if repeats <= 1 or round_ is None or round_ == FULL_ROUND:
        return steps, duration
    return (None if steps is None else max(1, math.ceil(steps / repeats)),
            None if duration is None else duration / repeats)


def per_variant(length: float, repeats: int) -> float:
    """What one variant runs in all, in steps or seconds, when round 1 runs ``length`` whole and
    every other round a K-th of it."""
    return length if repeats <= 1 else length * (2 * repeats - 1) / repeats


def full_for(total: float, repeats: int) -> float:
    """The whole length that makes ``per_variant`` come to ``total`` (a sweep's budget, shared
    between a variant's processes)."""
    return total if repeats <= 1 else total * repeats / (2 * repeats - 1)


def covered(steps: int | None, duration: float | None, repeats: int) -> str | None:
    """What each process covered, in words, for the summary's notes and the CLI's first lines:
    'round 1 runs all 300 steps of each variant; rounds 2–3 run 100 each, to measure the spread
    between processes'."""
    if repeats <= 1:
        return None
    rounds = "round 2" if repeats == 2 else f"rounds 2–{repeats}"
    if steps is not None:
        share, _ = process_length(steps, None, repeats, 2)
        return (f"round 1 runs all {steps:,} steps of each variant; {rounds} run "
                f"{share:,} each, to measure the spread between processes")
    if duration is not None:
        return (f"round 1 runs each variant for all of {duration:g} s; {rounds} run "
                f"{duration / repeats:.3g} s each, to measure the spread between processes")
    part = {2: "half", 3: "third", 4: "quarter"}.get(repeats, f"1/{repeats}")
    return (f"round 1 runs the recipe's own steps for each variant; {rounds} run a {part} "
            "of them each, to measure the spread between processes")
