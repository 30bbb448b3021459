"""``tuimon sweep --budget``: how long each run steps so that the whole sweep fits the budget.

The budget pays for three things, in this order under the interleaved schedule:
- starting: every run's process imports torch and builds the recipe at once (estimated
  ``START_S`` + ``START_PER_RUN_S`` a run per core, each round of --repeats);
- compiling: compiles take turns like steps do, so they add up; each compiled run's compile is
  estimated from this recipe's (or command's) earlier sessions under --out with the same
  Inductor cache (cold, unless --warm-cache / --cache-dir), the median per mode and precision,
  else ``GUESS_S`` × the mode's factor; rounds 2..K start warm from round 1's compile artifacts
  (control/warm.py) and cost their warm compiles' median in those sessions, else ``WARM_SHARE``
  of the cold estimate;
- stepping: what is left, less ``MARGIN`` for turn hand-overs, shared equally between the
  variants; within a variant, round 1's process steps for the whole ``--duration`` and rounds
  2..K for a K-th of it each (tuimon/lengths.py), counted without its compiles (the runner's
  ``--steady-duration``), so a compile longer than estimated cannot eat another run's steps.

A compile that takes longer than estimated makes the sweep overrun; the supervisor stops every
run when the budget is spent (``Plan.deadline_s``), and the summary says what was estimated and
what it took.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

from tuimon.fmt import fmt_s
from tuimon.lengths import full_for
from tuimon.variants import Variant

START_S, START_PER_RUN_S = 5.0, 3.0  # starting a round: import torch, build the recipe
GUESS_S = 60.0  # a cold compile with no history: a small CNN on 2 CPU cores takes 30-60 s
FACTOR = {"max-autotune": 3.0, "max-autotune-no-cudagraphs": 2.0, "reduce-overhead": 1.2}
MARGIN = 0.1  # of the stepping time, for turn hand-overs and the last turn's overshoot
MIN_STEP_S = 10.0  # stepping per run below which no steady state is worth reporting
HISTORY = 40  # earlier sessions looked at, newest first
# A warm compile (from the kept cache directory) as a share of a cold one with no history: tiny_mlp
# and the autoencoder on this project's 2-core VM took a tenth to a fifth (bench/RESULTS.md).
WARM_SHARE = 0.25
WARM = "warm"  # history's key for warm starts: (mode, precision, WARM)


def history(out: Path, key: dict) -> dict[tuple[str, str], list[float]]:
    """(mode, precision) -> cold compile seconds of earlier runs under ``out`` whose meta.json
    matches ``key``: the same recipe ({"recipe": path}) or command ({"command": [...]}) with the
    same Inductor cache ({"cache": ...}), newest first; (mode, precision, WARM) -> their warm
    starts' (runs seeded from compile artifacts)."""
    from tuimon.report import schema  # summary.json in today's shape, whichever tuimon wrote it

    found: dict[tuple[str, str], list[float]] = {}
    try:
        sessions = sorted((p for p in Path(out).iterdir() if p.is_dir()), reverse=True)[:HISTORY]
    except OSError:
        return found
    for path in sessions:
        try:
            meta = json.loads((path / "meta.json").read_text(encoding="utf-8"))
            if any(meta.get(k) != v for k, v in key.items()):
                continue
            runs = schema.read(path / "summary.json").get("runs", [])
        except (OSError, ValueError, AttributeError):
            continue
        for r in runs:
            _seen(found, r["mode"], r["precision"], r["warm"]["start"], r["compile"]["compile_s"],
                  r["timing"]["median_ms"])
    return found


def measured(rows) -> dict[tuple[str, str], list[float]]:
    """``history``'s dict of one session's own rows (``tuimon try --budget``: the tried session
    measured its compiles; a guess would be worse)."""
    found: dict[tuple[str, str], list[float]] = {}
    for r in rows:
        _seen(found, r.mode, r.precision, r.warm.start, r.compile.compile_s, r.timing.median_ms)
    return found


def _seen(found: dict, mode: str, precision: str, start: str | None, compile_s: float | None,
          median_ms: float | None) -> None:
    """A run's compile under its key: a compiled run that compiled and stepped."""
    if mode != "eager" and compile_s and median_ms:
        key = (mode, precision) + ((WARM,) if start == WARM else ())
        found.setdefault(key, []).append(float(compile_s))


def compile_estimate(v: Variant, seen: dict[tuple, list[float]]) -> tuple[float, bool]:
    """(seconds, from history) for one compiled run's cold compile."""
    cold = {k: values for k, values in seen.items() if len(k) == 2}
    if cold.get((v.mode, v.precision)):
        return statistics.median(cold[(v.mode, v.precision)]), True
    same_mode = [s for (mode, _), values in cold.items() if mode == v.mode for s in values]
    if same_mode:
        return statistics.median(same_mode), True
    default = [s for (mode, _), values in cold.items() if mode == "default" for s in values]
    base = statistics.median(default) if default else GUESS_S
    return base * FACTOR.get(v.mode, 1.0), bool(default)


def warm_estimate(v: Variant, seen: dict[tuple, list[float]], cold_s: float) -> float:
    """Seconds of one warm start's compile (rounds 2..K): measured before, else a share of cold."""
    if seen.get((v.mode, v.precision, WARM)):
        return statistics.median(seen[(v.mode, v.precision, WARM)])
    return cold_s * WARM_SHARE


def share(budget_s: float, variants: list[Variant], repeats: int, cores: int,
          seen: dict[tuple, list[float]], warm_rounds: bool = False,
          where: str = "earlier sessions of it under --out") -> dict:
    """{seconds, step_s (a run's mean), full_s (round 1's --duration), start_s, compile_s,
    from_history, text}; ValueError (one line) when the budget leaves less than MIN_STEP_S of
    stepping to a run. ``where``: what ``seen`` was measured in, as the text says it."""
    runs = len(variants) * repeats
    start_s = repeats * (START_S + START_PER_RUN_S * len(variants) / max(1, cores))
    compiled = [v for v in variants if v.compiled]
    estimates = [compile_estimate(v, seen) for v in compiled]
    compile_s = sum(s for s, _ in estimates)  # round 1: cold
    if warm_rounds:  # rounds 2..K start warm from round 1's artifacts (control/warm.py)
        compile_s += (repeats - 1) * sum(warm_estimate(v, seen, s) for v, (s, _) in zip(compiled, estimates,
                                                                                         strict=True))
    else:
        compile_s *= repeats
    step_s = (budget_s - start_s - compile_s) * (1 - MARGIN) / max(1, runs)  # a run's mean
    full = full_for(step_s * repeats, repeats)  # round 1's; rounds 2..K a K-th of it
    shortest = full / repeats if repeats > 1 else full
    known = sum(1 for _, h in estimates if h)
    source = ("no compile" if not estimates else
              f"from {where}" if known == len(estimates) else
              f"{known} of {len(estimates)} from {where}, the rest guessed at "
              f"{fmt_s(GUESS_S)} × the mode's factor" if known else
              f"none measured in {where}: guessed at {fmt_s(GUESS_S)} × the mode's factor")
    if shortest < MIN_STEP_S:
        need = start_s + compile_s + MIN_STEP_S * (step_s / shortest) * runs / (1 - MARGIN)
        raise ValueError(
            f"--budget {fmt_s(budget_s)} is too short for {runs} runs: starting ~{fmt_s(start_s)} "
            f"and compiling ~{fmt_s(compile_s)} ({source}) leave under {fmt_s(MIN_STEP_S)} of "
            f"steps each; give at least --budget {need / 60:.0f}m, or fewer --modes, --precision "
            "or --set values")
    each = (f"each of {runs} runs steps for {fmt_s(step_s)}" if repeats <= 1 else
            f"each variant's round 1 steps for {fmt_s(full)}, rounds 2–{repeats} for "
            f"{fmt_s(full / repeats)} each")
    text = (f"{each} (compiles apart); starting "
            f"estimated at ~{fmt_s(start_s)}, compiles at ~{fmt_s(compile_s)} in all ({source})")
    return {"seconds": budget_s, "step_s": round(step_s, 1), "full_s": round(full, 1),
            "start_s": round(start_s, 1),
            "compile_s": round(compile_s, 1), "from_history": known, "text": text}
