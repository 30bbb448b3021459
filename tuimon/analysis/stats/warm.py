"""Warm start: a compiled run's compile start, its cache hits and misses, its artifacts, and each
variant's figures per start, cold and warm side by side. Every process counts for the step
statistics (a warm process steps the same code); only compile figures are kept apart by start,
since averaging a cold compile with warm ones answers neither "what does the first run cost"
nor "what does a restart cost"."""

from __future__ import annotations

import statistics
from dataclasses import replace

from tuimon import events
from tuimon.analysis.stats.records import Warm, evolve
from tuimon.analysis.stats.rows import RunStats

COLD, WARM, PERSISTENT = "cold", "warm", "persistent"
WARM_EVENTS = frozenset({events.RUN_QUEUED, events.RUN_STARTED, events.ARTIFACTS, events.CACHE_LOOKUP,
                         events.COMPILE, events.CACHE_SOURCE})
ORDER = (COLD, WARM, PERSISTENT)
CACHES = ("fx", "aot")


def fold(w: Warm, e: dict) -> Warm:
    """A run's warm-start facts after one event (apply.py calls it for WARM_EVENTS)."""
    kind = e["type"]
    if e.get("validation") and kind in (events.COMPILE, events.CACHE_LOOKUP):
        return w  # a script's validation pass: its compiles are apart from training's (compiles.py)
    if kind == events.RUN_QUEUED:
        return evolve(w, start=e.get("start"), seed=e.get("seed"))
    if kind == events.ARTIFACTS:
        return _artifacts(w, e)
    if kind == events.CACHE_LOOKUP:
        which, state = e.get("cache") or "fx", e.get("state") or "miss"
        found = dict(w.cache.get(which, {}))
        found[state] = found.get(state, 0) + 1
        cache = {**w.cache, which: found}
        if e.get("reason"):
            cache["bypass_reason"] = e["reason"]
        return evolve(w, cache=cache)
    if kind == events.COMPILE:
        cache = dict(w.cache)
        if e.get("kernels") is not None:  # torch 2.4 does not say
            cache["kernels"] = cache.get("kernels", 0) + e["kernels"]
            cache["kernel_s"] = round(cache.get("kernel_s", 0.0) + (e.get("kernel_s") or 0.0), 4)
        # The metrics' counts too: torch 2.4 reports no lookups (``counts`` prefers lookups).
        for which, hits, misses in (("fx", "fx_cache_hits", "fx_cache_misses"),
                                    ("aot", "aot_cache_hits", "aot_cache_misses")):
            found = dict(cache.get(f"{which}_metrics", {}))
            found["hit"] = found.get("hit", 0) + (e.get(hits) or 0)
            found["miss"] = found.get("miss", 0) + (e.get(misses) or 0)
            cache[f"{which}_metrics"] = found
        return evolve(w, cache=cache)
    return w


def _artifacts(w: Warm, e: dict) -> Warm:
    action = e.get("action")
    if action == "unusable":
        if w.start == WARM:  # seeding failed: the run compiles cold
            w = evolve(w, start=COLD, seed=None)
        return _note(w, e.get("text"))
    if action == "seeded":
        seeded = {k: e.get(k) for k in ("kind", "bytes", "files", "seconds", "seed", "seed_run")
                  if e.get(k) is not None}
        w = evolve(w, artifacts={**w.artifacts, "seeded": seeded})
        return _note(w, e.get("text"))
    if action == "loaded":
        loaded = {k: e.get(k) for k in ("bytes", "entries", "seconds")}
        return evolve(w, artifacts={**w.artifacts, "loaded": loaded})
    if action == "saved":
        if e.get("bytes") is not None:
            w = evolve(w, artifacts={**w.artifacts, "bundle_bytes": e["bytes"]})
        return _note(w, e.get("text"))
    if action == "kept":
        artifacts = {**w.artifacts, **{k: e.get(k) for k in ("dir_bytes", "files", "path")}}
        if e.get("bundle_bytes") is not None:
            artifacts["bundle_bytes"] = e["bundle_bytes"]
        return evolve(w, artifacts=artifacts)
    return w


def _note(w: Warm, text: str | None) -> Warm:
    if text and text not in w.artifact_notes:
        return evolve(w, artifact_notes=[*w.artifact_notes, text])
    return w


def counts(cache: dict, which: str) -> dict:
    """{hit, miss, bypass} of one cache (fx or aot): the lookups torch reported, else the counts
    in its compile metrics (torch 2.4 reports no lookups)."""
    return cache.get(which) or cache.get(f"{which}_metrics") or {}


def missed(r: RunStats) -> bool:
    """A warm start that did not find everything it needed in its cache."""
    return any(counts(r.warm.cache, c).get("miss") for c in CACHES)


def run_starts(r: RunStats) -> Warm:
    """A compiled run's Warm with its own ``starts`` entry (one start: its own)."""
    if r.compiled and r.warm.start:
        return replace(r.warm, starts={r.warm.start: _figures([r])})
    return r.warm


def combine_starts(row: RunStats, group: list[RunStats]) -> RunStats:
    """A combined row (--repeats) with its processes split by start, the compile figures of
    each; the row's own compile_s, overhead_s, first step, phases and cache counts are its cold
    start's (the first run on a machine), else its warm one's."""
    if not row.compiled:
        return row
    by_start: dict[str, list[RunStats]] = {}
    for r in group:
        if r.warm.start:
            by_start.setdefault(r.warm.start, []).append(r)
    starts = {s: _figures(by_start[s]) for s in ORDER if s in by_start}
    if COLD not in starts:  # warm from another session: its cold figures, carried (first: the row's)
        cold = next((r.warm.starts[COLD] for r in group if COLD in r.warm.starts), None)
        starts = {COLD: cold, **starts} if cold else starts
    first = next((s for s in ORDER if s in by_start), None)
    if first is None:
        return replace(row, warm=replace(row.warm, starts=starts))
    chosen = by_start[first]
    fig = starts[first]
    kept = next((r for r in group if r.warm.artifacts.get("dir_bytes") is not None
                 or r.warm.artifacts.get("bundle_bytes")), None)
    warm = replace(row.warm, starts=starts, cache=dict(chosen[0].warm.cache), start=None,
                   artifacts=row.warm.artifacts if kept is None else {**kept.warm.artifacts, "run": kept.run},
                   artifact_notes=list(dict.fromkeys(n for r in group for n in r.warm.artifact_notes)),
                   miss_reasons=list(dict.fromkeys(x for r in group for x in r.warm.miss_reasons)),
                   seed=next((r.warm.seed for r in group if r.warm.seed), None))
    compiles = replace(row.compile, compile_s=fig["compile_s"],
                       compile_phases=dict(chosen[0].compile.compile_phases),
                       fx_cache_hits=sum(r.compile.fx_cache_hits for r in chosen),
                       fx_cache_misses=sum(r.compile.fx_cache_misses for r in chosen))
    timing = replace(row.timing, overhead_s=fig["overhead_s"], first_step_ms=fig["first_step_ms"])
    return replace(row, warm=warm, compile=compiles, timing=timing)


def _figures(runs: list[RunStats]) -> dict:
    def median(value):
        values = [v for v in map(value, runs) if v is not None]
        return statistics.median(values) if values else None

    cache: dict = {}
    for r in runs:
        for which in CACHES:
            for state, n in counts(r.warm.cache, which).items():
                cache.setdefault(which, {})[state] = cache.get(which, {}).get(state, 0) + n
        if "kernels" in r.warm.cache:
            cache["kernels"] = cache.get("kernels", 0) + r.warm.cache["kernels"]
    kernel_s = [r.warm.cache["kernel_s"] for r in runs if r.warm.cache.get("kernel_s")]
    if kernel_s:
        cache["kernel_s"] = statistics.median(kernel_s)
    phases = {}
    for phase in dict.fromkeys(p for r in runs for p in r.compile.compile_phases):  # not a set: key order
        values = [r.compile.compile_phases[phase] for r in runs if phase in r.compile.compile_phases]
        phases[phase] = round(statistics.median(values), 4)
    return {"processes": len(runs), "runs": [r.run for r in runs],
            "compile_s": median(lambda r: r.compile.compile_s),
            "overhead_s": median(lambda r: r.timing.overhead_s),
            "first_step_ms": median(lambda r: r.timing.first_step_ms),
            "phases": phases, "cache": cache, "breakeven_steps": None, "breakeven_s": None,
            "breakeven_never": False}


def carried(fig: dict) -> dict:
    """A cold start's figures measured in another session (``session``: which), as a start entry
    of this one; its break-even is computed here, against this session's steps."""
    return {"processes": fig.get("processes") or 1, "runs": [], "compile_s": fig.get("compile_s"),
            "overhead_s": fig.get("overhead_s"), "first_step_ms": fig.get("first_step_ms"),
            "phases": dict(fig.get("phases") or {}), "cache": dict(fig.get("cache") or {}),
            "breakeven_steps": None, "breakeven_s": None, "breakeven_never": False,
            "session": fig.get("session")}


def starts_breakeven(r: RunStats, base: RunStats, pays_off) -> Warm:
    """``r``'s Warm with each start's break-even against the baseline (``pays_off`` from
    compare.py)."""
    if not (r.timing.median_ms and base.timing.median_ms):
        return r.warm
    starts = {}
    for start, fig in r.warm.starts.items():
        if fig["overhead_s"] is not None:
            steps, seconds, never = pays_off(base.timing.median_ms, base.timing.overhead_s,
                                             r.timing.median_ms, fig["overhead_s"])
            fig = {**fig, "breakeven_steps": steps, "breakeven_s": seconds, "breakeven_never": never}
        starts[start] = fig
    return replace(r.warm, starts=starts)


def overhead(r: RunStats, start: str | None) -> float | None:
    """The warm-up a variant costs under a start (--start): its figure when measured, else
    its own (a run, an eager row, a session measured under one start only)."""
    fig = r.warm.starts.get(start or COLD)
    return fig["overhead_s"] if fig and fig.get("overhead_s") is not None else r.timing.overhead_s


class WarmTrack:
    """What the reasons of a miss need beyond a run's row, folded with the session's events:
    each run's cache lookups and facts (run_started), and --cache-from's source."""

    MAX_LOOKUPS = 500  # a run's lookups kept (a model that recompiles without end stops here)
    FACTS = ("device", "device_name", "amp_dtype", "batch_size", "image_size", "params", "threads",
             "torch", "extra")

    def __init__(self) -> None:
        self.lookups: dict[str, list[dict]] = {}
        self.facts: dict[str, dict] = {}
        self.source: dict | None = None  # the cache_source event

    def add(self, e: dict) -> None:
        kind, run = e["type"], e.get("run")
        if kind == events.CACHE_SOURCE:
            self.source = e
        elif kind == events.CACHE_LOOKUP and run is not None:
            found = self.lookups.setdefault(run, [])
            if len(found) < self.MAX_LOOKUPS:
                found.append(e)
        elif kind == events.RUN_STARTED and run is not None:
            self.facts[run] = {k: e.get(k) for k in self.FACTS if e.get(k) is not None}

    def finish(self, r: RunStats) -> Warm:
        """A run's Warm with its ``starts`` entry when compiled (a start from another session
        carries that session's cold figures, ``carried``), and a warm start's reasons when it
        missed."""
        from tuimon.analysis.stats.cache_miss import miss_reasons

        warm = run_starts(r)
        seeded = warm.artifacts.get("seeded") or {}
        source_event = self.source or {}
        from_source = self.source is not None and warm.seed == source_event.get("session")
        src = ((source_event.get("runs") or {}).get(seeded.get("seed_run")) or {}) if from_source else {}
        if warm.start == WARM and src.get("cold") and COLD not in warm.starts:
            warm = replace(warm, starts={COLD: carried(src["cold"]), **warm.starts})
        if warm.start != WARM or not (missed(r) or warm.cache.get("kernels")):
            return warm
        here = there = None
        if from_source:
            source, run_there = src.get("lookups") or [], src
            here, there = source_event.get("here") or {}, source_event.get("there") or {}
        else:
            seed = warm.seed or ""
            source, run_there = self.lookups.get(seed, []), self.facts.get(seed, {})
        return replace(warm, miss_reasons=miss_reasons(self.lookups.get(r.run, []), source,
                                                        self.facts.get(r.run, {}), run_there, here, there,
                                                        seeded, warm.cache))
