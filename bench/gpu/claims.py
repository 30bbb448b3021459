"""The compass of the GPU programme: each claim tuimon (or the seed) makes about a GPU, what was
expected, what the stages measured, and whether it holds. Pure functions of the stage JSONs
(bench/gpu/programme.py writes them); bench/gpu/report.py lays them out.

A claim whose step did not run (its stage not called, its budget spent, a feature not built yet)
is "not measured", never guessed.
"""

from __future__ import annotations

from collections.abc import Callable

from tuimon.fmt import fmt_bytes, fmt_ms, fmt_s

HOLDS, FAILS, NOT = "holds", "does not hold", "not measured"
LARGE = ("swin_b", "convnext_l")


class Results:
    """The stage documents, by stage name (the latest of each)."""

    def __init__(self, docs: dict[str, dict]) -> None:
        self.docs = docs

    def step(self, stage: str, name: str) -> dict | None:
        for s in (self.docs.get(stage) or {}).get("steps", []):
            if s["name"] == name:
                return s
        return None

    def result(self, stage: str, name: str) -> dict | None:
        """The step's result when it ran and left one, else None."""
        s = self.step(stage, name)
        if s is None or "result" not in s or s["status"].startswith(("skipped", "checked")):
            return None
        r = s["result"] or {}
        return None if r.get("collect_error") else r

    def why_not(self, stage: str, name: str) -> str:
        s = self.step(stage, name)
        if s is None:
            return f"stage {stage} not run" if stage not in self.docs else f"no step {name}"
        status = s["status"]
        if status.startswith("skipped: "):
            return status[len("skipped: "):]
        if status.startswith("checked"):
            return "dry run: checked, not run"
        err = (s.get("result") or {}).get("collect_error")
        return f"{status}; {err}" if err else status

    def run(self, stage: str, step: str, mode: str, precision: str | None = None) -> dict | None:
        r = self.result(stage, step)
        for row in (r or {}).get("runs", []):
            if row.get("mode") == mode and (precision is None or row.get("precision") == precision):
                return row
        return None

    def no_run(self, stage: str, step: str, mode: str, precision: str | None = None) -> str:
        """Why ``run`` found nothing: the step did not run, or its session has no such variant."""
        if self.result(stage, step) is None:
            return self.why_not(stage, step)
        return f"no {mode}{'/' + precision if precision else ''} run in {stage}/{step}"

    def pick(self, *places: tuple[str, str]) -> tuple[str, str]:
        """The first (stage, step) that left a result, else the first that ran, else the first:
        a claim measured by the essential stage and by a later one reads whichever came back."""
        return next((p for p in places if self.result(*p) is not None),
                    next((p for p in places if self.step(*p) is not None), places[0]))

    def sessions(self) -> list[dict]:
        return [s["result"] for d in self.docs.values() for s in d.get("steps", [])
                if isinstance(s.get("result"), dict) and "runs" in s["result"]]


Claim = tuple[str, str, Callable[[Results], tuple[str, str]]]


def doctor(r: Results) -> tuple[str, str]:
    where = r.pick(("essential", "doctor"), ("check", "doctor"))
    d = r.result(*where)
    if d is None:
        return r.why_not(*where), NOT
    t, nv = d.get("torch") or {}, d.get("nvml") or {}
    triton = t.get("triton") or {}
    cuda = "yes" if t.get("cuda_available") else f"no: {t.get('cuda_why_not')}"
    nvml = f"works, driver {nv.get('driver')}" if nv.get("available") else f"no: {nv.get('reason')}"
    text = (f"CUDA {cuda}; NVML {nvml}; Triton {triton.get('version')} "
            f"{'usable' if triton.get('usable') else 'not usable'}")
    ok = t.get("cuda_available") and nv.get("available") and triton.get("usable")
    return text, HOLDS if ok else FAILS


def cuda_tests(r: Results) -> tuple[str, str]:
    j = r.result("check", "cuda-tests")
    if j is None:
        return r.why_not("check", "cuda-tests"), NOT
    c = j["counts"]
    bad = [t for t in j["tests"] if t["outcome"] in ("failed", "error")]
    # the nccl test needs two GPUs: skipped on a one-GPU box, said, not a failure
    skipped = [t for t in j["tests"] if t["outcome"] == "skipped" and "two CUDA GPUs" not in t["message"]]
    text = f"{c['passed']} passed, {c['failed'] + c['error']} failed, {c['skipped']} skipped"
    if bad or skipped:
        text += ": " + "; ".join(f"{t['name'].split('::')[-1]} {t['outcome']} ({t['message'][:80]})"
                                 for t in bad + skipped)
    return text, FAILS if bad or skipped else HOLDS


def zero_syncs(r: Results) -> tuple[str, str]:
    where = r.pick(("essential", "syncs"), ("check", "cuda-tests"))
    j = r.result(*where)
    syncs = [t for t in (j or {}).get("tests", []) if "test_cuda_syncs" in t["name"]]
    parts, verdict = [], NOT
    if syncs:  # a test skipped for want of a GPU is not a pass
        passed = sum(t["outcome"] == "passed" for t in syncs)
        parts.append(f"tests/e2e/test_cuda_syncs.py: {passed} of {len(syncs)} passed")
        verdict = HOLDS if passed == len(syncs) else FAILS
    if not syncs:
        why = r.why_not(*where) if j is None else "not in the run"
        parts.append(f"tests/e2e/test_cuda_syncs.py: {why}")
    s = r.result("extras", "syncs-recipe")
    if s is None:
        parts.append(f"autoencoder under the guard: {r.why_not('extras', 'syncs-recipe')}")
    else:
        done = [x for x in s["runs"] if x.get("status") == "done"]
        parts.append(f"autoencoder eager/default × fp32/amp under the guard: {len(done)} of "
                     f"{len(s['runs'])} runs done")
        if len(done) < len(s["runs"]) or not s["runs"]:
            verdict = FAILS
        elif verdict == NOT:
            verdict = HOLDS
    return "; ".join(parts), verdict


def nvml_check(r: Results) -> tuple[dict | None, str]:
    """nvml_check.py's result when NVML worked, else (None, why not)."""
    n = r.result("check", "nvml")
    if n is None:
        return None, r.why_not("check", "nvml")
    return (n, "") if n.get("available") else (None, str(n.get("reason")))


def nvml_metrics(r: Results) -> tuple[str, str]:
    n, why = nvml_check(r)
    if n is None:
        return why, NOT if r.result("check", "nvml") is None else FAILS
    m = n.get("max_under_load") or {}
    missing = [k for k in ("util_gpu", "mem_used", "temp_c", "power_w", "clock_sm_mhz", "clock_mem_mhz")
               if m.get(k) is None]
    text = (f"under load: util {m.get('util_gpu')} %, VRAM {fmt_bytes(m.get('mem_used'))} of "
            f"{fmt_bytes(m.get('mem_total'))}, {m.get('temp_c')} °C, {m.get('power_w')} W of "
            f"{m.get('power_limit_w')} W, SM {m.get('clock_sm_mhz')} MHz, memory "
            f"{m.get('clock_mem_mhz')} MHz; unsupported: {', '.join(n.get('unsupported') or []) or 'none'}")
    return text, FAILS if missing or (m.get("util_gpu") or 0) == 0 else HOLDS


def throttle(r: Results) -> tuple[str, str]:
    n, why = nvml_check(r)
    if n is None:
        return why, NOT
    last = ((n.get("last") or {}).get("devices") or [{}])[0]
    mask = last.get("throttle_mask")
    seen = ", ".join(n.get("throttle_reasons_seen") or []) or "none"
    return f"mask read: {mask is not None}; reasons seen under load: {seen}", holds(mask is not None)


def per_process(r: Results) -> tuple[str, str]:
    n, why = nvml_check(r)
    runs = [x for s in r.sessions() for x in s["runs"]
            if (x.get("device") or "").startswith("cuda") and x.get("status") == "done"]
    with_mem = [x for x in runs if x.get("gpu_proc_mem_max")]
    parts = []
    if n is not None:
        sm = n.get("load_sm_util_max")
        parts.append(f"a load of its own: {fmt_bytes(n.get('load_gpu_mem_max'))}, SM "
                     f"{'n/a' if sm is None else f'{sm} %'}")
    if runs:
        parts.append(f"{len(with_mem)} of {len(runs)} CUDA runs have their process's VRAM")
    if not parts:
        return why, NOT
    ok = (n is None or bool(n.get("load_gpu_mem_max"))) and len(with_mem) == len(runs)
    return "; ".join(parts), HOLDS if ok else FAILS


def probe_cost(r: Results) -> tuple[str, str]:
    n, why = nvml_check(r)
    c = (n or {}).get("cost_per_sample")
    if not c:
        return why or "no cost measured", NOT
    return (f"median {c['median_ms']:.3f} ms, p90 {c['p90_ms']:.3f} ms a sample (one process on the "
            "GPU)"), HOLDS if c["median_ms"] <= 5 else FAILS


def summary_rows(r: Results) -> tuple[str, str]:
    runs = [x for s in r.sessions() for x in s["runs"]
            if (x.get("device") or "").startswith("cuda") and x.get("status") == "done"]
    if not runs:
        return "no CUDA session measured", NOT
    keys = ("gpu_util_mean", "vram_max", "temp_max", "power_mean")
    full = [x for x in runs if all(x.get(k) is not None for k in keys)]
    return (f"{len(full)} of {len(runs)} CUDA runs have GPU util, VRAM, temperature and power"
            ), HOLDS if len(full) == len(runs) else FAILS


def overhead(ms: str, limit: float) -> Callable[[Results], tuple[str, str]]:
    def claim(r: Results) -> tuple[str, str]:
        where = r.pick(("essential", "overhead"), ("check", "trust")) if ms == "1ms" else ("check", "trust")
        t = r.result(*where)
        o = ((t or {}).get("overhead") or {}).get(ms)
        if o is None:
            return r.why_not(*where) if t is None else f"no {ms} figure in {'/'.join(where)}", NOT
        runs = ", ".join(f"{p:+.2f}" for p in o["runs_pct"])
        text = f"{o['us']:+.1f} µs a step, {o['pct']:+.2f} % (runs: {runs} %)"
        if t.get("device") != "cuda":  # the dry run's stand-in: CPU steps say nothing of a GPU's
            return f"{text} on {t.get('device')}, not a GPU", NOT
        return text, holds(o["pct"] <= limit)
    return claim


def graphs_used(r: Results) -> tuple[str, str]:
    d, ro = r.run("extras", "cudagraphs", "default"), r.run("extras", "cudagraphs", "reduce-overhead")
    if not d or not ro or not d.get("median_ms") or not ro.get("median_ms"):
        return r.no_run("extras", "cudagraphs", "reduce-overhead"), NOT
    evidence = ro.get("graph_evidence") or []
    text = (f"tiny_mlp: default {fmt_ms(d['median_ms'])}, reduce-overhead {fmt_ms(ro['median_ms'])} a step"
            f"{'; in its capture: ' + ', '.join(evidence) if evidence else ''}")
    return text, HOLDS if ro["median_ms"] < 0.9 * d["median_ms"] or evidence else FAILS


def graphs_skipped(r: Results) -> tuple[str, str]:
    row = r.run("extras", "cudagraph-skip", "reduce-overhead")
    if row is None:
        return r.no_run("extras", "cudagraph-skip", "reduce-overhead"), NOT
    said = [g for g in row.get("cudagraphs") or [] if g.get("kind") == "skipped"]
    return (f"“{said[0].get('text', '')[:120]}”" if said else "no cudagraphs event recorded"
            ), HOLDS if said else FAILS


def oom(r: Results) -> tuple[str, str]:
    row = r.run("check", "oom", "eager")
    if row is None:
        return r.no_run("check", "oom", "eager"), NOT
    text = f"{row.get('failure_kind')}: {(row.get('error') or '')[:160]}"
    named = (row.get("failure_kind") or "").startswith("oom") and "peak" in (row.get("error") or "")
    return text, HOLDS if named else FAILS


def seed_speedup(r: Results) -> tuple[str, str]:
    got, parts = [], []
    for m in LARGE:
        row = r.run("amp", m, "default", "amp")
        if row and row.get("speedup"):
            got.append(row["speedup"])
            parts.append(f"{m} {row['speedup']:.2f}× ({_ci(row)})")
    if not got:
        return r.no_run("amp", "swin_b", "default", "amp"), NOT
    text = "; ".join(parts)
    return text, HOLDS if len(got) == len(LARGE) and min(got) >= 1.05 else FAILS if min(got) < 1.05 else NOT


def seed_vram(r: Results) -> tuple[str, str]:
    parts, ratios = [], []
    for m in LARGE:
        e, d = r.run("amp", m, "eager", "amp"), r.run("amp", m, "default", "amp")
        if e and d and e.get("cuda_peak_allocated") and d.get("cuda_peak_allocated"):
            ratio = d["cuda_peak_allocated"] / e["cuda_peak_allocated"]
            ratios.append(ratio)
            parts.append(f"{m} {(ratio - 1) * 100:+.0f} % ({fmt_bytes(d['cuda_peak_allocated'])})")
    if not ratios:
        return r.no_run("amp", "swin_b", "default", "amp"), NOT
    return "; ".join(parts), HOLDS if max(ratios) <= 0.95 and len(ratios) == len(LARGE) else FAILS


def seed_small(r: Results) -> tuple[str, str]:
    t, b = r.run("amp", "swin_t", "default", "amp"), r.run("amp", "swin_b", "default", "amp")
    if not t or t.get("speedup") is None:
        return r.no_run("amp", "swin_t", "default", "amp"), NOT
    if not b or b.get("speedup") is None:
        return r.no_run("amp", "swin_b", "default", "amp"), NOT
    return f"swin_t {t['speedup']:.2f}×, swin_b {b['speedup']:.2f}×", holds(t["speedup"] < b["speedup"])


def phases_by_compile(r: Results) -> tuple[str, str]:
    compiled = [x for s in r.sessions() for x in s["runs"] if x.get("mode") != "eager"
                and x.get("compile_s") and (x.get("device") or "").startswith("cuda")]
    if not compiled:
        return "no compiled CUDA run", NOT
    with_phases = [x for x in compiled if x.get("compile_phases")]
    return f"{len(with_phases)} of {len(compiled)} compiled runs", holds(len(with_phases) == len(compiled))


def fp32_convnext(r: Results) -> tuple[str, str]:
    row = r.run("fp32", "convnext_l", "default", "fp32")
    if row is None:
        return r.no_run("fp32", "convnext_l", "default", "fp32"), NOT
    return (f"{row.get('status')}, {row.get('measured')} steps measured, {len(row.get('warnings') or [])} "
            "warnings"), HOLDS if row.get("status") == "done" and row.get("measured") else FAILS


def autotune(r: Results) -> tuple[str, str]:
    rows = [(m, r.run("modes", m, "max-autotune")) for m in ("swin_t", "swin_b", "convnext_l")]
    ran = [(m, x) for m, x in rows if x]
    if not ran:
        return r.no_run("modes", "swin_t", "max-autotune"), NOT
    text = "; ".join(f"{m} {x.get('status')}, compile {fmt_s(x.get('compile_s'))}" for m, x in ran)
    return text, HOLDS if all(x.get("status") == "done" and x.get("measured") for _, x in ran) else FAILS


def nccl(r: Results) -> tuple[str, str]:
    s = r.result("check", "nccl")
    if s is None:
        return r.why_not("check", "nccl"), NOT
    done = [x for x in s["runs"] if x.get("status") == "done"]
    return f"{len(done)} of {len(s['runs'])} variants done", holds(bool(done) and len(done) == len(s["runs"]))


def screenshots(r: Results) -> tuple[str, str]:
    where = r.pick(("essential", "screenshot"), ("extras", "screenshots"))
    s = r.result(*where)
    shots = (s or {}).get("screenshots") or []
    if not shots:
        return r.why_not(*where), NOT
    gpu = [x["file"] for x in shots if x["gpu_rows"]]
    return f"{', '.join(x['file'] for x in shots)}; with GPU rows: {len(gpu)}", HOLDS if gpu else FAILS


def phases(r: Results) -> tuple[str, str]:
    s = r.result("phases", "phases-recipe")
    if s is None:
        return r.why_not("phases", "phases-recipe"), NOT
    fields = sorted({k for x in s["runs"] for k in x if "phase" in k.lower() and k != "compile_phases"})
    return (f"phase fields: {', '.join(fields)}" if fields else "no phase fields in the summary"
            ), HOLDS if fields else FAILS


def warm(r: Results) -> tuple[str, str]:
    s = r.result("warm", "warm-recipe")
    if s is None:
        return r.why_not("warm", "warm-recipe"), NOT
    parts, verdicts = [], []
    for x in s["runs"]:
        if x.get("mode") == "eager":
            continue
        warm_s = next((v for k, v in x.items() if "warm" in k.lower() and "compile" in k.lower()
                       and isinstance(v, (int, float))), None)
        if warm_s is None:
            fields = sorted(k for k in x if "warm" in k.lower())
            parts.append(f"{x['run']}: no warm compile time among {fields}")
            continue
        parts.append(f"{x['run']}: cold {fmt_s(x.get('compile_s'))}, warm {fmt_s(warm_s)}")
        verdicts.append(x.get("compile_s") is not None and warm_s < x["compile_s"])
    if not verdicts:
        return "; ".join(parts) or "no compiled run", NOT
    return "; ".join(parts), HOLDS if all(verdicts) else FAILS


def try_fixes(r: Results) -> tuple[str, str]:
    """tuimon try's GPU-only fixes (issue 34): each applied by its run, and what it did said."""
    s = r.result("try", "try-recipe")
    if s is None:
        return r.why_not("try", "try-recipe"), NOT
    said = {n: bool(got.get("applied")) for x in s["runs"] for n, got in (x.get("fixes") or {}).items()}
    wanted = [said.get(n, False) for n in ("tf32", "reduce-overhead", "no-cudagraphs")]
    lines = [t["line"] for t in s.get("tried") or [] if t.get("line")]
    return "; ".join([f"applied: {said}", *lines]), holds(all(wanted))


def holds(ok: bool) -> str:
    return HOLDS if ok else FAILS


def _ci(row: dict) -> str:
    lo, hi = row.get("speedup_lo"), row.get("speedup_hi")
    return f"95 % CI {lo:.2f}–{hi:.2f}" if lo and hi else "no interval"


CLAIMS: list[Claim] = [
    ("tuimon doctor sees the GPU", "CUDA available, NVML works, Triton usable", doctor),
    ("the CUDA tests pass, none skipped for want of a GPU", "all passed (nccl: 2 GPUs)", cuda_tests),
    ("zero added syncs per step", "TUIMON_SYNC_DEBUG=error: every guarded run finishes", zero_syncs),
    ("NVML for real: util, VRAM, temperature, power, clocks", "every metric read under load", nvml_metrics),
    ("throttle reasons read and decoded", "the mask read", throttle),
    ("each run's own VRAM (by pid)", "read for every CUDA run", per_process),
    ("NVML probe cost per sample", "≤ 5 ms (one sample a second)", probe_cost),
    ("GPU rows in the summary", "util, VRAM, °C, W for every CUDA run", summary_rows),
    ("overhead at ~1 ms GPU steps", "≤ 2 % (CPU: +1.6 %)", overhead("1ms", 2.0)),
    ("overhead at ~10 ms GPU steps", "≤ 0.5 % (CPU: −0.1 %)", overhead("10ms", 0.5)),
    ("CUDA graphs used by reduce-overhead", "a launch-bound step ≥ 10 % faster than default", graphs_used),
    ("a skipped-CUDA-graphs reason read", "a cudagraphs event with torch's words", graphs_skipped),
    ("an OOM named with the allocator's peaks", "failure kind oom, peaks in the line", oom),
    ("seed: large models faster with default (amp)", "swin_b, convnext_l 1.05–1.30×", seed_speedup),
    ("seed: VRAM lower with default (amp)", "5–10 % lower (allocator peak)", seed_vram),
    ("seed: the small model gains least", "swin_t's speedup below swin_b's", seed_small),
    ("compile time by phase on a GPU", "phases for every compiled run", phases_by_compile),
    ("seed: ConvNeXt-L compiles in fp32", "default/fp32 runs and measures", fp32_convnext),
    ("seed: max-autotune compiles", "done, with steps measured", autotune),
    ("a 2-rank nccl job", "both variants done (needs 2 GPUs)", nccl),
    ("GPU screenshots", "SVGs with GPU rows", screenshots),
    ("step phases on CUDA (issue 25)", "phase fields for every run", phases),
    ("warm start on CUDA (issue 26)", "warm compile shorter than cold", warm),
    ("tuimon try's GPU-only fixes (issue 34)", "tf32, reduce-overhead, no-cudagraphs applied; "
     "each one's outcome said", try_fixes),
]


def compass(r: Results) -> list[dict]:
    out = []
    for claim, expected, fn in CLAIMS:
        try:
            measured, verdict = fn(r)
        except Exception as exc:  # a result of an unexpected shape: said, not a crash
            measured, verdict = f"could not read: {type(exc).__name__}: {exc}", NOT
        out.append({"claim": claim, "expected": expected, "measured": measured, "verdict": verdict})
    return out


from claims_essential import CLAIMS as ESSENTIAL_CLAIMS  # noqa: E402 - they use the helpers above
from claims_memory import CLAIMS as MEMORY_CLAIMS  # noqa: E402

# issue 43: the essential stage's seed session, CUDA graphs counted, a script on CUDA, first
CLAIMS[:0] = ESSENTIAL_CLAIMS
CLAIMS += MEMORY_CLAIMS  # issue 35: memory per phase, the graph pool, the batch that fits, energy
