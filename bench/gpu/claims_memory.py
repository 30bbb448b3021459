"""The compass's claims of issue 35 (memory per phase, energy), from the check stage's
``memory-energy`` session (tiny_mlp eager, default and reduce-overhead, one after the other) and
nvml_check.py's energy under load. Pure functions of the stage JSONs, as claims.py's."""

from __future__ import annotations

from claims import FAILS, HOLDS, NOT, Results, holds, nvml_check

from tuimon.fmt import fmt_bytes

STEP = ("check", "memory-energy")


def _runs(r: Results) -> tuple[list[dict], str]:
    got = r.result(*STEP)
    if got is None:
        return [], r.why_not(*STEP)
    runs = [x for x in got.get("runs", []) if (x.get("device") or "").startswith("cuda")]
    return runs, "" if runs else "no CUDA run in the session"


def phases(r: Results) -> tuple[str, str]:
    runs, why = _runs(r)
    if not runs:
        return why, NOT
    parts, ok = [], True
    for x in runs:
        got = x.get("mem_phases") or {}
        peaks = [(got.get(p) or {}).get("peak") for p in ("forward", "backward", "optimizer")]
        ok = ok and all(peaks)
        parts.append(f"{x['mode']}: " + " · ".join(fmt_bytes(v) for v in peaks))
    compiled = [x for x in runs if x["mode"] != "eager"]
    changed = [x for x in compiled
               if all("change" in f for f in (x.get("mem_phases") or {}).values())]
    parts.append(f"{len(changed)} of {len(compiled)} compiled runs set against eager per phase")
    return "; ".join(parts), holds(ok and len(changed) == len(compiled))


def graph_pool(r: Results) -> tuple[str, str]:
    runs, why = _runs(r)
    ro = next((x for x in runs if x["mode"] == "reduce-overhead"), None)
    if ro is None:
        return why or "no reduce-overhead run", NOT
    if ro.get("graph_pool_unread"):
        return f"cannot tell: {ro['graph_pool_unread']}", FAILS
    why_fit = (ro.get("batch_fit_why") or {}).get("code")
    return (f"{fmt_bytes(ro.get('graph_pool'))} reserved, {fmt_bytes(ro.get('graph_pool_used'))} in "
            f"use; the batch that fits: {why_fit or ro.get('batch_fit')}"), holds(bool(ro.get("graph_pool")))


def batch_fit(r: Results) -> tuple[str, str]:
    runs, why = _runs(r)
    eager = next((x for x in runs if x["mode"] == "eager"), None)
    if eager is None:
        return why or "no eager run", NOT
    fit = eager.get("batch_fit")
    return (f"eager: ~{fit}× today's of {fmt_bytes(eager.get('mem_total'))}" if fit is not None
            else f"cannot tell: {(eager.get('batch_fit_why') or {}).get('code')}"), holds((fit or 0) >= 1)


def energy(r: Results) -> tuple[str, str]:
    runs, why = _runs(r)
    parts, verdict = [], NOT
    if runs:
        alone = [x for x in runs if x.get("joules_per_step") and x.get("energy_source") == "nvml-counter"]
        parts.append("; ".join(f"{x['mode']}: {x.get('joules_per_step') or 0:.3g} J/step over "
                               f"{x.get('energy_steps')} steps, {x.get('joules_run') or 0:.0f} J a run"
                               for x in runs))
        verdict = holds(len(alone) == len(runs) and all(x.get("joules_run") for x in runs))
    else:
        parts.append(why)
    n, _ = nvml_check(r)
    e = (n or {}).get("energy") or {}
    if e.get("counter_j") and e.get("power_time_j"):
        gap = abs(e["counter_j"] - e["power_time_j"]) / e["power_time_j"]
        parts.append(f"under load: counter {e['counter_j']:.0f} J, power × time {e['power_time_j']:.0f} J "
                     f"over {e['seconds']} s ({gap:.0%} apart)")
        if gap > 0.25:
            verdict = FAILS
        elif verdict == NOT:
            verdict = HOLDS
    return "; ".join(p for p in parts if p), verdict


CLAIMS = [
    ("memory per phase on CUDA (issue 35)", "fwd, bwd, opt peaks for every run; compiled vs eager",
     phases),
    ("the CUDA-graph pool under reduce-overhead", "its size read from torch's cudagraph trees",
     graph_pool),
    ("the largest batch that would fit", "eager tiny_mlp: ≥ 1× today's", batch_fit),
    ("energy per step from NVML's counter", "every run alone: J/step and J/run; counter within 25 % "
     "of power × time", energy),
]
