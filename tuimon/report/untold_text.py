"""An interval too wide to tell, in words (issue 40.4): what every view says in place of a
figure whose 95 % interval analysis/stats/noise.py ``untold`` found too wide — "cannot tell" and
why, with no figure (the table's cells, the Why, the phases, the strip, the verdict, ``tuimon
compare``, ``tuimon try``). summary.json keeps the figures beside the code: they are data."""

from __future__ import annotations

from tuimon.analysis import Point

# What made the interval that wide: what it rests on (stats/noise.py ratio_basis's code).
RESTS = {
    "own_noise_rounds": "the steps of each process spread that much",
    "own_noise": "the steps of each process spread that much",
    "paired": "the processes of each round ran that far apart",
    "unpaired": "the processes ran that far apart",
    "assumed": "the steps spread that much (one process a variant)",
}
SPREAD = "the steps or the processes spread that much"


def untold_why(p: Point, whose: str = "its") -> str:
    """'its 95 % interval reaches beyond ÷3 and ×3 of its estimate: the processes ran that far
    apart'."""
    b = p.get("bound")
    return f"{whose} 95 % interval reaches beyond ÷{b:g} and ×{b:g} of its estimate: " \
           f"{RESTS.get(p.get('rests'), SPREAD)}"


def untold_text(p: Point, above: str = "faster", below: str = "slower") -> str:
    """'cannot tell (its 95 % interval ...)'; an interval wholly on one side of 1: 'faster beyond
    noise, by how much cannot tell (...)' (``above``, ``below``: a ratio's words either side)."""
    side = {"above": above, "below": below}.get(p.get("side"))
    head = f"{side} beyond noise, by how much cannot tell" if side else "cannot tell"
    return f"{head} ({untold_why(p)})"


# A session whose least told change is beyond the bound (stats/noise.py untold_change).
PLAN = "can tell none of the speedups compile commonly gives (its processes ran too far apart)"
