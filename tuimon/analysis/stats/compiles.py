"""What a compiled variant compiled: a script's validation passes' compiles apart from
training's (their guards in a word each), and a variant that compiled nothing, with why.

The runner marks a validation pass's compile events ``validation: true`` (runner/script/
validation.py) and says why a compiled variant will compile nothing in a note flagged
``uncompiled``; collect.py folds them into the row, and ``compile_story`` words them once the
run's events are in.
"""

from __future__ import annotations

import re
import statistics

from tuimon.analysis.stats.rows import RunStats

SIZE = re.compile(r"size mismatch at index (\d+)\. expected (\d+), actual (\d+)")
GLOBAL = re.compile(r"GLOBAL_STATE changed: ([\w ,]+)")
TRAINING = re.compile(r"\.training\b")
NOTHING = ("no compile ran in this variant: the script called no torch.compile that ran and tuimon "
           "compiled no module; pass --compile-module NAME (a module's class) or call torch.compile "
           "in the script")


def reason_word(reason: str) -> str:
    """A failed guard in a few words: 'grad_mode', 'batch 8' (dimension 0 became 8), 'size 12
    at dim 1', 'train/eval mode', else the guard itself, shortened."""
    first = reason.strip().splitlines()[0] if reason.strip() else ""
    first = re.sub(r"^\d+/\d+:\s*", "", first)
    if m := GLOBAL.search(first):
        return m.group(1).strip()
    if m := SIZE.search(first):
        index, actual = m.group(1), m.group(3)
        return f"batch {actual}" if index == "0" else f"size {actual} at dim {index}"
    if TRAINING.search(first):
        return "train/eval mode"
    guard = first.split("  # ")[0].strip()
    return guard if len(guard) <= 60 else guard[:59] + "…"


def compile_story(r: RunStats) -> None:
    """Fills ``val_words`` (the validation passes' failed guards, in words, each once) and
    ``nothing_compiled`` (why a compiled variant compiled nothing; None when it compiled, or
    while it may still)."""
    r.val_words = list(dict.fromkeys(reason_word(x) for x in r.val_reasons))
    r.nothing_compiled = None
    if not r.compiled or r.graphs_fwd or r.compiles or r.compile_s or r.status in (
            "queued", "failed", "skipped"):
        return
    if r.uncompiled:  # the runner said so as the first step ended
        r.nothing_compiled = r.uncompiled
    elif r.compile_s == 0.0 and r.status in ("done", "stopped") and r.median_ms:
        r.nothing_compiled = NOTHING  # it said it compiled for 0 s, and reached a steady state


def combine_compiles(row: RunStats, processes: list[RunStats]) -> None:
    """--repeats: the combined row's validation compiles (summed) and whether it compiled
    nothing (its first process speaks for it)."""
    if not processes:
        return
    row.val_compiles = sum(r.val_compiles for r in processes)
    row.val_recompiles = sum(r.val_recompiles for r in processes)
    times = [r.val_compile_s for r in processes if r.val_compile_s is not None]
    row.val_compile_s = statistics.median(times) if times else None
    row.val_reasons = list(dict.fromkeys(x for r in processes for x in r.val_reasons))
    row.val_limit = any(r.val_limit for r in processes)
    row.uncompiled = processes[0].uncompiled
    compile_story(row)
    if all(r.nothing_compiled for r in processes):
        row.nothing_compiled = processes[0].nothing_compiled
