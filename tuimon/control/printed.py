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
PIPED = re.compile(r"^\s*(\d+)\s*\|")  # "20 | loss 6.2503 | lr 5e-04 | 81.12ms" (llama2.c)
NUMBER = r"([-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?)"
# A loss and the word naming it ("D loss: 0.42", "train loss 2.3", "Loss_D: 1.1", "loss=0.5").
LOSS = re.compile(r"(?:\b([A-Za-z]\w*?)[ _-]?)?loss(?:[_-]?([A-Za-z]\w*))?\s*\]?\s*[:=]?\s*" + NUMBER,
                  re.IGNORECASE)
NOT_TRAINING = re.compile(r"^(?:val|valid|validation|eval|test|dev)", re.IGNORECASE)
MS = re.compile(r"(?:\b(?:dt|time|step_time|took)\b\s*[:=]?\s*|\|\s*)" + NUMBER + r"\s*ms\b",
                re.IGNORECASE)
READ = 8 << 20  # bytes of a log read at most (its start: a step's prints, not a final report)
KEPT = 400  # points kept of each series


def printed_numbers(log: Path) -> dict | None:
    """``{"losses": [[step, loss], ...], "ms": [[step, ms], ...]}`` from a run's log, or None
    when it prints fewer than three of either. A script that prints several losses a line (a
    GAN's "D loss" and "G loss") gives ``losses_by`` {name: series} instead of ``losses``: which
    one its step trains is the statistics' to find. A validation or test loss is no step's, and
    a series whose steps do not increase (a batch counted within its epoch) names no step."""
    try:
        with open(log, "rb") as f:
            text = f.read(READ).decode("utf-8", "replace")
    except OSError:
        return None
    losses: dict[str, list[list]] = {}
    times: list[list] = []
    for line in text.splitlines():
        found = STEP.search(line)
        step = found or COUNTER.search(line) or PIPED.search(line)
        if step is None:
            continue
        k = int(step.group(1))
        tail = line[step.end():] if found else line
        for m in LOSS.finditer(tail):
            name = (m.group(1) or m.group(2) or "").lower()
            series = losses.setdefault(name, [])
            if not NOT_TRAINING.match(name) and len(series) < KEPT:
                series.append([k, float(m.group(3))])
        if (ms := MS.search(line)) and len(times) < KEPT:
            times.append([k, float(ms.group(1))])
    named = {name: series for name, series in losses.items()
             if len(series) >= 3 and _increasing(series)}
    out: dict = {"ms": times} if len(times) >= 3 and _increasing(times) else {}
    if len(named) == 1:
        out["losses"] = next(iter(named.values()))
    elif named:
        out["losses_by"] = named
    return out or None


def _increasing(series: list[list]) -> bool:
    return all(a[0] < b[0] for a, b in zip(series, series[1:], strict=False))
