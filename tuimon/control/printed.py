"""The numbers a script prints about its own steps, read from its log once it has exited: the
loss and the step time it says at a step (``step 57 | loss: 4.157 | dt: 3.84ms``, ``[Batch
370/400] [D loss: -1.23]``, ``iter 10: loss 2.30, time 512.66ms``). Said as a ``printed`` event;
the statistics set them beside tuimon's own (analysis/stats/anatomy.py): a reading of the loop
that the script's own numbers contradict is said, not published. Only lines that name a step (or
a ``[k/n]`` counter) count: an epoch's mean loss says nothing of a step."""

from __future__ import annotations

import re
from pathlib import Path

STEP = re.compile(r"\b(?:step|iter|iteration|it|batch|update|global_step)\b\s*[:=#]?\s*\[?\s*(\d+)",
                  re.IGNORECASE)
COUNTER = re.compile(r"^\s*\[(\d+)\s*/\s*\d+\]")  # "[120/8000] Loss_D ..."
NUMBER = r"([-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?)"
LOSS = re.compile(r"loss\w*\s*\]?\s*[:=]?\s*" + NUMBER, re.IGNORECASE)
MS = re.compile(r"\b(?:dt|time|step_time|took)\b\s*[:=]?\s*" + NUMBER + r"\s*ms\b", re.IGNORECASE)
READ = 8 << 20  # bytes of a log read at most (its start: a step's prints, not a final report)
KEPT = 400  # points kept of each series


def printed_numbers(log: Path) -> dict | None:
    """``{"losses": [[step, loss], ...], "ms": [[step, ms], ...]}`` from a run's log, or None
    when it prints fewer than three of either."""
    try:
        with open(log, "rb") as f:
            text = f.read(READ).decode("utf-8", "replace")
    except OSError:
        return None
    losses: list[list] = []
    times: list[list] = []
    for line in text.splitlines():
        step = STEP.search(line) or COUNTER.search(line)
        if step is None:
            continue
        k = int(step.group(1))
        tail = line[step.end():] if STEP.search(line) else line
        if (loss := LOSS.search(tail) or LOSS.search(line)) and len(losses) < KEPT:
            losses.append([k, float(loss.group(1))])
        if (ms := MS.search(line)) and len(times) < KEPT:
            times.append([k, float(ms.group(1))])
    out = {name: series for name, series in (("losses", losses), ("ms", times)) if len(series) >= 3}
    return out or None
