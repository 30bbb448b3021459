"""How one event changes a run's figures (``apply_run``) and the session's own facts
(``apply_session``); and ``as_told``: a row with what the run's events say of it
(sessiondir/run_state.py). Collector (collect.py) calls these. Records are frozen: an event puts
a new one in the row (records.py says why)."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

from tuimon import events
from tuimon.analysis.stats.anatomy import anatomy_of
from tuimon.analysis.stats.compiles import fallback, made_graph
from tuimon.analysis.stats.flops import counted
from tuimon.analysis.stats.known import Known
from tuimon.analysis.stats.records import Compiles, Failure, evolve
from tuimon.analysis.stats.rows import RunStats, SessionSummary
from tuimon.analysis.stats.warm import WARM_EVENTS, fold
from tuimon.sessiondir.run_state import RunState, failure_text

SAID = ("device", "device_name", "params", "batch_size", "torch", "python", "cuda")


def apply_session(summary: SessionSummary, e: dict) -> None:
    if e["type"] == events.SESSION_STARTED:
        summary.quiet_only = bool(e.get("quiet_only"))
        summary.pin_malloc = e.get("pin_malloc")
        summary.schedule = e.get("schedule")
        summary.axes = {str(k): [str(v) for v in vs] for k, vs in (e.get("axes") or {}).items()}
        summary.horizon = e.get("horizon")
        if e.get("loss_tolerance") is not None:
            summary.loss_tolerance = e["loss_tolerance"]
        summary.sweep = bool(e.get("sweep"))
        summary.budget = e.get("budget")
        summary.skipped = list(e.get("skipped") or [])
        summary.start = e.get("start")
        summary.started_t = e.get("t")
        summary.until_known = e.get("until_known")
    elif e["type"] == events.KNOWN:
        if e.get("action") == "design" and summary.until_known is not None:
            summary.until_known = {**summary.until_known, "max_rounds": e.get("max_rounds")}
        elif e.get("known"):
            summary.known = Known.from_dict(e["known"])
    elif e["type"] == events.CACHE_SOURCE:
        summary.cache_source, summary.cache_auto = e.get("session"), bool(e.get("auto"))
    elif e["type"] == events.SESSION_ENDED and summary.started_t is not None:
        summary.wall_s = round(e["t"] - summary.started_t, 3)
    elif e["type"] == events.PROBE_INFO:
        if "gpu_available" in e:
            summary.gpu_available, summary.gpu_reason = e["gpu_available"], e.get("reason")
        summary.unsupported += [m for m in e.get("unsupported", []) if m not in summary.unsupported]


def as_told(r: RunStats, s: RunState) -> RunStats:
    """The row (a copy) with what the run's events say of it. A job's lowest rank speaks for its
    device and model; a job's length and build are the supervisor's, said nowhere."""
    said = s.started or {}
    own = {} if s.ranks else said
    told = {k: said[k] for k in (SAID[:4] if s.ranks else SAID) if said.get(k) is not None}
    timing = replace(r.timing, warmup_auto=str(said.get("warmup", "auto")) == "auto",
                     length_steps=own.get("steps"), length_s=own.get("duration"))
    return replace(
        r, **told, status=s.status, mode=s.mode, precision=s.precision, axes=dict(s.axes),
        replicate=s.replicate, notes=s.notes, warnings=list(s.warnings), wall_s=s.wall_s,
        turns=s.turns, timing=timing, failure=_failure(r.failure, s),
        profiles=[p for p in s.profiles if "rank" not in p],  # a job's ranks' captures are theirs
        paused_s=round(sum(b - a for a, b in s.pauses if b is not None), 3))


def _failure(f: Failure, s: RunState) -> Failure:
    """What it failed of (its failed event), and how long it was silent if stopped while hung."""
    e = s.failure
    if e is None:
        return replace(f, hung_s=s.hung_s)
    kind = e.get("kind") or ("exception" if e.get("stage") != "crash" else None)
    return replace(f, error=failure_text(e), failure_kind=kind, hung_s=s.hung_s,
                   failure_tail=e.get("traceback") or None)


def apply_run(r: RunStats, e: dict) -> None:
    kind = e["type"]
    if kind == events.RUN_STARTED:
        # tuimon try's fixes it was asked for: none applied until its runner says so (below; a
        # script's hooks may say so before its run_started)
        asked = {str(name): r.fixes.get(str(name), {"applied": False, "text": None})
                 for name in e.get("fixes") or []}
        r.fixes = {**asked, **{k: v for k, v in r.fixes.items() if k not in asked}}
    elif kind == events.MEMORY:
        r.probes = replace(r.probes, **{key: max(getattr(r.probes, key) or 0, e[key]) for key in (
            "peak_rss", "cuda_peak_allocated", "cuda_peak_reserved") if e.get(key) is not None})
    elif kind == events.FINISHED:
        r.anatomy = replace(r.anatomy, clock={**r.anatomy.clock, **{
            k: e[k] for k in ("t", "seconds", "paused_s", "profile_s") if e.get(k) is not None}})
        c = r.compile
        r.compile = replace(
            c, compiles=e.get("compiles", c.compiles),
            compile_s=e["compile_s"] if e.get("compile_s") is not None and r.compiled else c.compile_s,
            # training's apart (script runs)
            val_compiles=e.get("val_compiles", c.val_compiles),
            val_compile_s=e["val_compile_s"] if e.get("val_compile_s") else c.val_compile_s)
    elif kind == events.RUN_EXITED:  # its process's end: the time check's (stats/anatomy.py)
        r.anatomy = replace(r.anatomy, clock={**r.anatomy.clock, "exited_t": e["t"],
                                              "life_s": e.get("seconds")})
    elif kind == events.ANATOMY:  # how its loop was read, counts so far (checked at the summary)
        r.anatomy = anatomy_of(e, r.anatomy)
    elif kind == events.PRINTED:  # what the script printed of its steps (control/printed.py)
        r.anatomy = replace(r.anatomy, printed={k: e[k] for k in ("losses", "losses_by", "ms")
                                                if e.get(k)})
    elif kind == events.FLOPS:  # a new record: the counts and peaks (rates at the summary)
        r.flops = counted(e)
    elif kind == events.WARNING:
        if e.get("fix"):  # what came of a fix (runner/fixes.py): applied once any note says so
            name = str(e["fix"])
            said = r.fixes.get(name, {"applied": False, "text": None})
            text = str(e.get("text") or "").removeprefix(f"fix {name}: ")
            r.fixes = {**r.fixes, name: {"applied": said["applied"] or bool(e.get("applied")),
                                         "text": said["text"] if said["applied"] else text}}
        if e.get("uncompiled"):  # a compiled variant that compiles nothing: why
            r.compile = replace(r.compile, uncompiled=str(e["uncompiled"]))
        if e.get("untimed"):  # its training ran in child processes (runner/script/children.py)
            r.timing = replace(r.timing, untimed=str(e.get("text")))
    elif kind == events.MODEL and isinstance(e.get("repeated"), dict):
        mine = e["repeated"]  # its model's repeated block: the most repeated of those it compiled
        if r.repeated is None or int(mine.get("count") or 0) > int(r.repeated.get("count") or 0):
            r.repeated = dict(mine)
    elif kind in (events.COMPILE, events.GRAPH_BREAK, events.CUDAGRAPHS, events.RECOMPILE):
        r.compile = fold_compile(r.compile, e)
    if kind in WARM_EVENTS:
        r.warm = fold(r.warm, e)


def fold_compile(c: Compiles, e: dict) -> Compiles:
    """A compile, graph break, CUDA graph skip or recompile: the run's Compiles after it."""
    kind = e["type"]
    if e.get("validation") and kind in (events.COMPILE, events.GRAPH_BREAK, events.RECOMPILE):
        return _validation(c, e)
    if kind == events.COMPILE:
        return _compile(c, e)
    if kind == events.GRAPH_BREAK:
        where = f"{Path(e['file']).name}:{e.get('line')}" if e.get("file") else "?"
        known = next((k for k, b in enumerate(c.graph_breaks) if b["where"] == where
                      and b["reason"] == e.get("reason")), None)
        if known is None:
            return evolve(c, graph_breaks=[*c.graph_breaks, {
                "where": where, "reason": e.get("reason") or "", "hint": _hint(e.get("detail")), "count": 1}])
        return evolve(c, graph_breaks=_counted_at(c.graph_breaks, known))
    if kind == events.CUDAGRAPHS:
        return evolve(c, cudagraphs=_count(c.cudagraphs, {"kind": e.get("kind") or "skipped",
                                                           "text": e.get("text") or ""}))
    if e.get("after_validation"):
        # Training's first compile of code only a validation pass had compiled (a sanity check
        # before the first step): torch's recompile, not training's; its guards say validation's.
        return evolve(c, val_reasons=_add_reasons(c.val_reasons, e))
    reasons = list(c.recompile_reasons)
    for reason in e.get("reasons") or []:
        if reason not in reasons:
            reasons.append(reason)
    return evolve(c, recompiles=c.recompiles + 1, recompile_reasons=reasons)


def _validation(c: Compiles, e: dict) -> Compiles:
    """A validation pass's compile, recompile or graph break: apart from training's."""
    if e["type"] == events.COMPILE:
        made, failures = made_graph(e), c.compile_failures
        if not made and e.get("forward", True):
            failures = _count(failures, fallback(e))
        reason = e.get("fail_reason") or ""
        limit = bool(e.get("failed")) and ("recompile limit" in reason.lower()
                                           or "cache_size_limit" in reason)
        # (val_compiles: the runner's count, in finished, replaces this at the end)
        return evolve(c, val_compiles=c.val_compiles + made, compile_failures=failures,
                       val_compile_s=round((c.val_compile_s or 0.0) + (e.get("seconds") or 0.0), 4),
                       val_limit=c.val_limit or limit)
    if e["type"] == events.RECOMPILE:
        return evolve(c, val_recompiles=c.val_recompiles + 1, val_reasons=_add_reasons(c.val_reasons, e))
    return c


def _add_reasons(found: list[str], e: dict) -> list[str]:
    out = list(found)
    for reason in e.get("reasons") or []:
        if reason not in out and len(out) < 20:
            out.append(reason)
    return out


def _compile(c: Compiles, e: dict) -> Compiles:
    """A graph only where the compile made one (stats/compiles.py): a frame Dynamo could not
    compile runs eager, and is kept as a fallback with torch's reason; its time is still the
    run's compile time (it was spent)."""
    forward = e.get("forward", True)
    phases = dict(c.compile_phases)
    if forward:
        graphs_fwd = c.graphs_fwd + made_graph(e)
        # An AOTAutograd cache hit brings its backward graph with it: no lazy backward compile
        # follows (a warm start's "2 fwd + 0 bwd graphs" would say no backward was compiled).
        graphs_bwd = c.graphs_bwd + bool(made_graph(e) and e.get("aot_cache_hits"))
        for phase, seconds in (e.get("phases") or {}).items():
            phases[phase] = phases.get(phase, 0.0) + (seconds or 0.0)
    else:
        graphs_fwd, graphs_bwd = c.graphs_fwd, c.graphs_bwd + 1
        phases["backward"] = phases.get("backward", 0.0) + (e.get("seconds") or 0.0)
    failures = c.compile_failures
    if forward and not made_graph(e) or e.get("failed"):  # ran eager: e.g. Dynamo's recompile limit
        failures = _count(failures, fallback(e))
    recompile_s = c.recompile_s
    if c.recompiles and _attempt(e.get("compile_id")):  # a recompile's compile (training's)
        recompile_s = round(recompile_s + (e.get("seconds") or 0.0), 4)
    return evolve(c, graphs_fwd=graphs_fwd, graphs_bwd=graphs_bwd, compile_phases=phases,
                   recompile_s=recompile_s,
                   fx_cache_hits=c.fx_cache_hits + (e.get("fx_cache_hits") or 0),
                   fx_cache_misses=c.fx_cache_misses + (e.get("fx_cache_misses") or 0),
                   compile_failures=failures)


def _attempt(compile_id) -> int:
    """'0/2' -> 2: which compile of its frame (0: the first; a recompile's is 1 on)."""
    head, slash, tail = str(compile_id or "").rpartition("/")
    lead = re.match(r"\d+", tail)
    return int(lead.group()) if slash and lead else 0


def _count(found: list[dict], item: dict) -> list[dict]:
    """One row per distinct item, counted (a bounded list: torch may say the same often)."""
    known = next((k for k, f in enumerate(found) if all(f.get(x) == v for x, v in item.items())), None)
    if known is not None:
        return _counted_at(found, known)
    return [*found, {**item, "count": 1}] if len(found) < 20 else found


def _counted_at(found: list[dict], k: int) -> list[dict]:
    """``found`` with its ``k``th row counted once more (a new row: the old list stays as it was)."""
    return [*found[:k], {**found[k], "count": found[k]["count"] + 1}, *found[k + 1:]]


def _hint(detail: str | None) -> str | None:
    """torch's own advice in a graph break's text ("Hint: ...")."""
    for line in (detail or "").splitlines():
        if line.strip().startswith("Hint:"):
            return line.split(":", 1)[1].strip()[:300] or None
    return None
