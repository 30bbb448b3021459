"""The compass's claims of the essential stage (issue 43): the seed's question on one model
(essential.py's ``seed`` session: eager against default in amp), CUDA graphs counted under
reduce-overhead, an unmodified script on CUDA. Pure functions of the stage JSONs, as claims.py's;
``ORDER`` lists every claim the essential call measures, in its steps' order, for the report."""

from __future__ import annotations

from claims import FAILS, HOLDS, NOT, Results, _ci, holds

from tuimon.fmt import fmt_bytes, fmt_ms, fmt_s

SEED = ("essential", "seed")
PHASES = ("forward", "backward", "optimizer")


def _pair(r: Results) -> tuple[dict | None, dict | None, str]:
    """The seed's eager and default rows, done and on CUDA, or why not."""
    e, d = r.run(*SEED, "eager", "amp"), r.run(*SEED, "default", "amp")
    if e is None or d is None:
        return None, None, r.no_run(*SEED, "default" if e else "eager", "amp")
    bad = [x for x in (e, d) if x.get("status") != "done" or not (x.get("device") or "").startswith("cuda")]
    if bad:
        return None, None, "; ".join(f"{x['run']}: {x.get('status')} on {x.get('device')}"
                                     f"{' (' + str(x.get('error'))[:100] + ')' if x.get('error') else ''}"
                                     for x in bad)
    return e, d, ""


def speedup(r: Results) -> tuple[str, str]:
    e, d, why = _pair(r)
    if d is None:
        return why, NOT
    verdict = (r.result(*SEED) or {}).get("verdict") or "no verdict"
    text = (f"eager {fmt_ms(e.get('median_ms'))}, default {fmt_ms(d.get('median_ms'))} a step; "
            f"{d['speedup']:.2f}× ({_ci(d)}), {d.get('measured')} steps measured; {verdict}"
            if d.get("speedup") else f"no speedup figure; {verdict}")
    return text, holds(bool(d.get("speedup") and d.get("speedup_lo") and d.get("speedup_hi")))


def compile_phases(r: Results) -> tuple[str, str]:
    _, d, why = _pair(r)
    if d is None:
        return why, NOT
    phases = {k: v for k, v in (d.get("compile_phases") or {}).items() if isinstance(v, (int, float))}
    text = f"{fmt_s(d.get('compile_s'))}: " + (" · ".join(f"{k} {fmt_s(v)}" for k, v in phases.items())
                                               or "no phases")
    return text, holds(bool(d.get("compile_s")) and bool(phases))


def breakeven(r: Results) -> tuple[str, str]:
    _, d, why = _pair(r)
    if d is None:
        return why, NOT
    if d.get("breakeven_never"):
        return "never: default is not faster per step", HOLDS
    steps = d.get("breakeven_steps")
    return (f"after {steps:,} steps ({fmt_s(d.get('breakeven_s'))})" if steps else "not said"
            ), holds(bool(steps))


def vram(r: Results) -> tuple[str, str]:
    e, d, why = _pair(r)
    if d is None:
        return why, NOT
    parts = [f"{x['mode']}: allocator {fmt_bytes(x.get('cuda_peak_allocated'))}, process "
             f"{fmt_bytes(x.get('gpu_proc_mem_max'))}" for x in (e, d)]
    read = all(x.get("cuda_peak_allocated") and x.get("gpu_proc_mem_max") for x in (e, d))
    if read:
        parts.append(f"default {(d['cuda_peak_allocated'] / e['cuda_peak_allocated'] - 1) * 100:+.0f} % "
                     "(allocator)")
    return "; ".join(parts), holds(read)


def memory_phases(r: Results) -> tuple[str, str]:
    e, d, why = _pair(r)
    if d is None:
        return why, NOT
    parts, ok = [], True
    for x in (e, d):
        got = x.get("mem_phases") or {}
        peaks = [(got.get(p) or {}).get("peak") for p in PHASES]
        ok = ok and all(peaks)
        parts.append(f"{x['mode']}: " + " · ".join(fmt_bytes(v) for v in peaks))
    changes = [f"{p} {(v or {}).get('change')}" for p, v in (d.get("mem_phases") or {}).items()
               if (v or {}).get("change")]
    parts.append("default against eager: " + (", ".join(changes) or "not set against eager"))
    return "; ".join(parts), holds(ok and bool(changes))


def flops_phases(r: Results) -> tuple[str, str]:
    _, d, why = _pair(r)
    if d is None:
        return why, NOT
    f = d.get("flops") or {}
    got = {p: ((f.get("phases") or {}).get(p) or {}).get("flops") for p in PHASES}
    text = (f"{f.get('precision')}: " + " · ".join(f"{p} {v / 1e9:.1f} GFLOP" if v else f"{p} –"
                                                   for p, v in got.items())
            + (f"; {f['error']}" if f.get("error") else ""))
    return text, holds(bool(got["forward"] and got["backward"]) and f.get("precision") in ("bf16", "fp16"))


def mfu(r: Results) -> tuple[str, str]:
    _, d, why = _pair(r)
    if d is None:
        return why, NOT
    f = d.get("flops") or {}
    step = f.get("step") or {}
    sheet, measured = step.get("mfu_datasheet"), step.get("mfu_measured")
    pct = lambda v: "n/a" if v is None else f"{v * 100:.1f} %"  # noqa: E731
    text = (f"{pct(sheet)} of the datasheet's {(f.get('peak_datasheet') or 0) / 1e12:.0f} TFLOP/s "
            f"({f.get('peak_device') or f.get('peak_lookup')}), {pct(measured)} of the measured "
            f"{(f.get('peak_measured') or 0) / 1e12:.0f} TFLOP/s ({f.get('precision')})"
            + (f"; over 100 %: {', '.join(f['mfu_over'])}" if f.get("mfu_over") else ""))
    within = all(v is not None and 0 < v <= 1 for v in (sheet, measured))
    return text, holds(within and not f.get("mfu_over"))


def nvml(r: Results) -> tuple[str, str]:
    e, d, why = _pair(r)
    if d is None:
        return why, NOT
    keys = ("gpu_util_mean", "vram_max", "temp_max", "power_mean")
    parts = [f"{x['mode']}: util {x.get('gpu_util_mean')} %, VRAM {fmt_bytes(x.get('vram_max'))}, "
             f"{x.get('temp_max')} °C, {x.get('power_mean')} W" for x in (e, d)]
    ok = all(x.get(k) is not None for x in (e, d) for k in keys) and \
        all(x["gpu_util_mean"] > 0 for x in (e, d))
    return "; ".join(parts), holds(ok)


def graphs_counted(r: Results) -> tuple[str, str]:
    where = ("essential", "cudagraphs")
    ro, eager = r.run(*where, "reduce-overhead"), r.run(*where, "eager")
    if ro is None:
        return r.no_run(*where, "reduce-overhead"), NOT
    if ro.get("status") != "done":
        return f"{ro.get('status')}: {str(ro.get('error'))[:120]}", FAILS
    skipped = [g.get("text", "")[:100] for g in ro.get("cudagraphs") or [] if g.get("kind") == "skipped"]
    launches = ro.get("graph_launches")
    text = (f"{'no capture' if launches is None else f'{launches:g} graph launches a step'} in its "
            f"capture, pool {fmt_bytes(ro.get('graph_pool'))}; {fmt_ms(ro.get('median_ms'))} a step "
            f"against eager's {fmt_ms((eager or {}).get('median_ms'))}"
            + (f"; skipped: {skipped[0]}" if skipped else ""))
    return text, holds(bool(launches) and bool(ro.get("graph_pool")) and not skipped)


def script(r: Results) -> tuple[str, str]:
    where = ("essential", "script")
    s = r.result(*where)
    if s is None:
        return r.why_not(*where), NOT
    runs, files = s.get("runs") or [], s.get("files") or {}
    parts, ok = [], bool(runs)
    for x in runs:
        phases = [p for p in ("data", *PHASES) if (x.get("step_phases") or {}).get(p)]
        cuda = (x.get("device") or "").startswith("cuda")
        ok = ok and x.get("status") == "done" and cuda and len(phases) == 4
        parts.append(f"{x['run']} on {x.get('device')}: {x.get('status')}, phases "
                     f"{', '.join(phases) or 'none'}")
    wrote = {o["label"]: o.get("files") or [] for o in files.get("outputs") or []}
    apart = len(wrote) == len(runs) and all("checkpoint.pt" in f for f in wrote.values())
    parts.append("each run's own files: " + ("; ".join(f"{k} {', '.join(v)}" for k, v in wrote.items())
                                             or "none listed")
                 + f"; the working directory changed: {files.get('changed')}, writes outside: "
                   f"{files.get('outside')}")
    return "; ".join(parts), holds(ok and apart and files.get("changed") == 0 and not files.get("outside"))


CLAIMS = [
    ("seed on the GPU: swin_t default against eager (amp)", "a speedup with its 95 % interval and a "
     "verdict (the seed: the small model gains least)", speedup),
    ("seed: compile time by phase", "default's compile and its phases", compile_phases),
    ("seed: break-even", "the steps after which compile pays off, or never", breakeven),
    ("seed: VRAM of each variant", "allocator peak and the process's own, both variants", vram),
    ("seed: memory per phase", "fwd, bwd, opt peaks for both; default set against eager", memory_phases),
    ("seed: FLOPs per phase", "forward and backward counted, in bf16 / fp16 (amp)", flops_phases),
    ("seed: MFU against the datasheet and the measured peak", "both read, 0–100 %", mfu),
    ("seed: NVML under load", "util > 0, VRAM, °C, W for both variants", nvml),
    ("CUDA graphs seen and counted (reduce-overhead)", "graph launches a step in its capture, a pool, "
     "no skip", graphs_counted),
    ("an unmodified script on CUDA: phases, files apart", "data, fwd, bwd, opt per step; each run "
     "wrote its checkpoint in its own view, the working directory unchanged", script),
]
# Every claim the essential call measures, in its steps' order (claims.py's own among them)
ORDER = ["tuimon doctor sees the GPU", *(c[0] for c in CLAIMS[:8]), "zero added syncs per step",
         CLAIMS[8][0], CLAIMS[9][0], "overhead at ~1 ms GPU steps", "GPU screenshots"]
