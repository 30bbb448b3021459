"""The summary table: one row per statistic, one cell text per run (or per --repeats variant),
and the notes on profiler captures and failures. Shared by summary.md, the terminal and the
TUI, which format a number only through here (and ``fmt``)."""

from __future__ import annotations

from tuimon.analysis import RunStats, SessionSummary, busy, columns, load_figures
from tuimon.fmt import DASH, fmt_bytes, fmt_count, fmt_loss, fmt_ms, fmt_rate, fmt_s, short_name
from tuimon.report.compile_text import (  # noqa: F401 - the compile rows' words, re-exported
    compile_cache,
    compile_notes,
    graphs_text,
    phases_text,
    top_break_text,
    validation_text,
)
from tuimon.report.document import CODE, FAILURE, Line
from tuimon.report.flops_text import flop_rows
from tuimon.report.memory_text import memory_rows
from tuimon.report.phase_text import part_rows
from tuimon.report.rank_text import RANK_ROWS, collectives_matter, collectives_text
from tuimon.report.trust_text import load_words
from tuimon.report.untold_text import untold_text, untold_why
from tuimon.report.warm_text import artifacts_text, has_starts, per_start
from tuimon.report.warm_text import cache_text as caches_text


def status_text(r: RunStats) -> str:
    if r.status == "skipped":  # tuimon sweep: too big for this machine
        return f"skipped: {r.failure.error}"
    if r.failure.error:
        return f"{r.status}: {r.failure.error}"
    if r.failure.hung_s is not None:
        return f"{r.status} while hung (no step for {fmt_s(r.failure.hung_s)})"
    return r.status


def failure_lines(r: RunStats, lines: int = 12) -> list[Line]:
    """A failed run's kind, after how many steps, and the tail of its traceback or log under it."""
    if r.status != "failed":
        return []
    kind = f" ({r.failure.failure_kind})" if r.failure.failure_kind else ""
    steps = f"{r.timing.steps} recorded step{'s' if r.timing.steps != 1 else ''}"
    tail = (r.failure.failure_tail or "").rstrip().splitlines()
    fatal = next((i for i, line in enumerate(tail) if line.startswith("Fatal Python error")), None)
    # faulthandler's report whole (its header names the signal; a thread's stack follows
    # another's), else the last lines of the traceback or log.
    tail = tail[fatal:][:3 * lines] if fatal is not None else tail[-lines:]
    return [Line(FAILURE, f"{r.label}{kind}: failed after {steps}: {r.failure.error}; log: logs/{r.run}.log",
                 {"run": r.run}, tuple(Line(CODE, line) for line in tail))]


def speedup_text(r: RunStats) -> str:
    if r.compare.speedup is None:
        return DASH
    if r.compile.nothing_compiled:  # eager against eager: no speedup of compile's to word
        return "– (nothing compiled: it ran eager)"
    text = f"{r.compare.speedup:.2f}×"
    if r.compare.untold is not None:  # no figure: its interval holds every answer
        text = untold_text(r.compare.untold)
    elif r.compare.speedup_lo is not None:
        text += f" (95 % CI {r.compare.speedup_lo:.2f}–{r.compare.speedup_hi:.2f})"
        if r.compare.within_noise:
            text += ", within noise"
    if r.load.load_differs:
        text += " — unreliable: other processes' load differed"
    elif r.load.faults_differ:
        text += " — unreliable: page faults differed"
    elif r.doubts:
        text += " — unreliable"
    return text


SPEEDUPS = "the speedup's"


def breakeven_text(r: RunStats) -> str:
    if not r.compiled:
        return DASH
    if r.compile.nothing_compiled:
        return "– (nothing compiled)"
    if r.compare.breakeven_never:
        return "never (not faster per step)"
    if r.compare.breakeven_steps is None:
        return DASH
    if r.compare.breakeven_steps == 0:
        return "at once"
    if r.compare.untold is not None:  # a break-even of a speedup no one can tell
        return f"cannot tell ({untold_why(r.compare.untold, whose=SPEEDUPS)})"
    text = f"{r.compare.breakeven_steps:,} steps (≈ {fmt_s(r.compare.breakeven_s)})"
    if r.compare.breakeven_lo is not None:
        hi = f"{r.compare.breakeven_hi:,}" if r.compare.breakeven_hi is not None else "never"
        text += f", range {r.compare.breakeven_lo:,}–{hi}"
    return text


def peak_memory_text(r: RunStats) -> str:
    p = r.probes
    if p.cuda_peak_allocated:
        return f"{fmt_bytes(p.cuda_peak_allocated)} CUDA alloc ({fmt_bytes(p.cuda_peak_reserved)} reserved)"
    return f"{fmt_bytes(p.peak_rss)} RSS" if p.peak_rss else DASH


def compile_text(r: RunStats) -> str:
    if r.timing.overhead_s is None and r.compile.compile_s is None:
        return DASH
    warm = fmt_s(r.timing.overhead_s)
    if r.compile.nothing_compiled:
        return f"{warm} (nothing compiled)"
    if r.compiled and r.compile.compile_s is not None:
        return f"{warm} (compile {fmt_s(r.compile.compile_s)})"
    return warm


APART = {  # why a run's first loss is not its baseline's (stats/compare.py why_apart)
    "unseeded": "its eager processes start apart too: the script does not seed itself, so each "
                "trained on other weights or data",
    "random ops": "the script is seeded (its eager processes start alike): compiled code draws "
                  "dropout's and other random ops' numbers otherwise than eager",
    "unknown": "other random draws: an unseeded script, or random ops (dropout) that compiled "
               "code draws otherwise than eager",
}


def loss_text(r: RunStats) -> str:
    loss, base = r.loss, r.compare.baseline
    if loss.final_loss is None:
        return DASH
    text = fmt_loss(loss.final_loss)
    if r.anatomy.loss_sum > 1:  # which of its losses tuimon took (analysis/stats/anatomy.py)
        text += f" (the sum of its {r.anatomy.loss_sum} backward() losses a step)"
    if base and base != r.label and loss.loss_comparable is False:
        apart = APART.get(loss.loss_apart or "unknown", APART["unknown"])
        text += f" (not comparable with {base}: the first losses differ — {apart})"
    elif base and base != r.label and loss.max_loss_diff is not None:
        text += f" (max Δ {loss.max_loss_diff:.2g} vs {base} over {loss.common_steps} steps)"
    return text


def axis_text(r: RunStats) -> str:
    """Against the same variant at the axes' baseline values (their first)."""
    if r.compare.axis_speedup is None:
        return "axis baseline" if r.axes and r.timing.median_ms and r.compare.axis_baseline is None else DASH
    vs = r.compare
    unit = " per sample" if vs.axis_per_sample else ""
    if vs.axis_untold is not None:
        return f"against {vs.axis_baseline}{unit}: {untold_text(vs.axis_untold)}"
    text = f"{vs.axis_speedup:.2f}× {vs.axis_baseline}{unit}"
    lo, hi = r.compare.axis_speedup_lo, r.compare.axis_speedup_hi
    if lo is not None and hi is not None:
        noise = ", within noise" if lo <= 1.0 <= hi else ""
        text += f" (95 % CI {lo:.2f}–{hi:.2f}{noise})"
    return text


def other_load_text(r: RunStats) -> str:
    """Other processes' load during the run's steady steps (a noisy neighbour)."""
    if r.load.foreign_cores is None and not r.load.foreign_gpu_pids:
        return DASH
    text = load_words(load_figures(r)) + (" — busy" if busy(r) else "")
    if r.left_out:  # the rounds its step time rests on; a busy round was left out
        text += " (its quiet rounds; " + ", ".join(
            f"round {p['round']}: {_load_words(p)}" for p in r.left_out) + ", left out)"
    if r.load.busy_dropped:
        text += f" · {r.load.busy_dropped} steps kept out (--quiet-only)"
    return text


def median_text(r: RunStats) -> str:
    """The median step and its p10–p90; of alternating steps, their cycles' mean steps'."""
    t = r.timing
    if t.median_ms is None:
        return DASH
    text = f"{fmt_ms(t.median_ms)} ({fmt_ms(t.p10_ms)}–{fmt_ms(t.p90_ms)})"
    return text + (f" — the mean step of {t.cycle}-step cycles (its steps alternate)" if t.cycle > 1 else "")


def gc_text(r: RunStats) -> str:
    """Python's garbage collector in a steady step (stats/gc_pauses.py): its mean pause and how
    often it ran."""
    t = r.timing
    if t.gc_ms is None:
        return DASH
    share = f" ({t.gc_ms / t.median_ms:.0%} of the median step)" if t.median_ms else ""
    return f"{fmt_ms(t.gc_ms)} a step{share} · {t.gc_per_100:g} collections per 100 steps"


def gc_matters(r: RunStats) -> bool:
    """Worth a row: the collector paused a step by 1 % of it or more, on average."""
    t = r.timing
    return bool(t.gc_ms and t.median_ms and t.gc_ms >= 0.01 * t.median_ms)


def faults_text(r: RunStats) -> str:
    """Minor page faults a steady step (stats/faults.py): fresh memory mapped at every step."""
    return fmt_count(r.load.faults_per_step) if r.load.faults_per_step is not None else DASH


def measured_text(r: RunStats) -> str:
    text = f"{r.timing.measured} of {r.timing.steps}"
    if r.processes or r.left_out:
        text += f", in {len(r.processes) + len(r.left_out)} processes"
        if r.left_out:
            rounds = ", ".join(str(p["round"]) for p in r.left_out)
            text += f" (round{'s' if len(r.left_out) > 1 else ''} {rounds} left out: busy)"
        return text
    if r.timing.steady_from is not None:
        text += f" (steady from step {r.timing.steady_from}{', detected' if r.timing.warmup_auto else ''})"
    if r.turns > 1:
        text += f", in {r.turns} turns"
    return text


def processes_text(r: RunStats) -> str:
    """A combined row's processes, round by round: their medians and steps (round 1 runs the
    whole length, the others a share: tuimon/lengths.py), and a round left out for its load."""
    if not r.processes and not r.left_out:
        return DASH
    out = []
    for p in sorted(r.processes + r.left_out, key=lambda p: p.get("round") or 0):
        text = fmt_ms(p["median_ms"]) if p["median_ms"] else p["status"]
        if p.get("steps"):
            text += f" ({p['steps']:,} steps)"
        if p.get("why"):
            text += f" — left out: {_load_words(p)}"
        out.append(text)
    return " · ".join(out)


def _load_words(p: dict) -> str:
    cores = p.get("load_cores")
    return f"other processes used ~{cores:.1f} of the cores" if cores is not None else "other load"


def cpu_text(r: RunStats) -> str:
    p = r.probes
    if p.cpu_mean is None and p.tree_rss_max is None:
        return DASH
    parts = [f"{p.cpu_mean:.0f} % mean, {p.cpu_max:.0f} % max" if p.cpu_mean is not None else "",
             f"RSS {fmt_bytes(p.tree_rss_max)}" if p.tree_rss_max else "",
             f"{p.children_max} child proc." if p.children_max else ""]
    return ", ".join(x for x in parts if x)


def throttle_text(r: RunStats) -> str:
    if r.probes.throttled_share is None:
        return "n/a"
    if not r.probes.throttle_reasons:
        return "no"
    why = ", ".join(sorted(r.probes.throttle_reasons, key=r.probes.throttle_reasons.__getitem__,
                             reverse=True))
    return f"{r.probes.throttled_share:.0%} of the time ({why})"


def cache_text(r: RunStats) -> str:
    """Its caches' hits of lookups, per start (report/warm_text.py)."""
    return per_start(caches_text)(r)


def _or_na(value, fmt) -> str:
    return "n/a" if value is None else fmt(value)


GPU_ROWS = [
    ("GPU util (mean)", lambda r: _or_na(r.probes.gpu_util_mean, lambda v: f"{v:.0f} %")),
    ("VRAM used (NVML peak)", lambda r: _or_na(r.probes.vram_max, fmt_bytes)
     + (f" (run: {fmt_bytes(r.probes.gpu_proc_mem_max)})" if r.probes.gpu_proc_mem_max else "")),
    ("GPU temperature (max)", lambda r: _or_na(r.probes.temp_max, lambda v: f"{v:.0f} °C")),
    ("GPU power (mean)", lambda r: _or_na(r.probes.power_mean, lambda v: f"{v:.0f} W")),
    ("throttled", throttle_text),
]


def busy_speedup(summary: SessionSummary):
    """The speedup cell, tagged like the verdict when the machine was busy throughout: a speedup
    the verdict calls unreliable must not read as a fact beside it (issue 33: HF run_clm's
    "0.08× (95 % CI 0.03–0.21)" under load, untagged while the verdict said busy)."""
    tag = " — unreliable: the machine was busy" if summary.busy and not summary.quiet_only else ""

    def text(r: RunStats) -> str:
        out = speedup_text(r)
        off = r.load.load_differs or r.load.faults_differ or r.doubts or r.compile.nothing_compiled
        if tag and r.compare.speedup is not None and (r.compare.baseline or r.label) != r.label and not off:
            out += tag
        return out

    return text


def table(summary: SessionSummary) -> tuple[list[str], list[list[str]]]:
    """The blog-post table: header and rows, shared by markdown and the terminal."""
    runs = columns(summary)
    speedup = busy_speedup(summary)
    rows = [
        ("status", status_text),
        ("steps measured", measured_text),
        ("median step (p10–p90)", median_text),
        ("throughput", lambda r: fmt_rate(r.timing.throughput, r.timing.throughput_unit)),
        ("speedup vs eager", speedup),
        ("compile / warm-up time", per_start(compile_text)),
        ("compile pays off after", per_start(breakeven_text)),
        ("compile time by phase", per_start(phases_text)),
        ("graphs / breaks / recompiles", graphs_text),
        *([("validation passes (apart)", validation_text)]
          if any(validation_text(r) != DASH for r in runs) else []),
        ("top graph break", top_break_text),
        ("Inductor cache", cache_text),
        ("compile artifacts", artifacts_text),
        ("peak memory", peak_memory_text),
        ("final loss (same seed, same batches)", loss_text),
        ("CPU, process tree (100 % = 1 core)", cpu_text),
        ("other processes while it stepped", other_load_text),
    ]
    if not has_starts(summary):  # eager only, or a session recorded before tuimon kept them
        rows.remove(("compile artifacts", artifacts_text))
    if summary.variants:
        rows.insert(3, ("median step per process", processes_text))
    if summary.axes:
        rows.insert(rows.index(("speedup vs eager", speedup)) + 1, ("vs axis baseline", axis_text))
    at = next(k for k, (name, _) in enumerate(rows) if name == "compile / warm-up time")
    rows[at:at] = part_rows(summary) + flop_rows(summary)  # where the step goes; its FLOPs and MFU
    if any(r.load.faults_per_step is not None for r in runs):
        rows.insert(rows.index(("peak memory", peak_memory_text)) + 1, ("page faults per step", faults_text))
    if any(gc_matters(r) for r in runs):
        rows.insert(rows.index(("peak memory", peak_memory_text)), ("Python GC pauses", gc_text))
    if any(r.job.world_size for r in runs):  # torchrun jobs: their ranks against each other
        rows += RANK_ROWS
        if collectives_matter(runs):  # FSDP2 on the CPU: each rank's wait in its collectives
            rows.append(("FSDP all-gather / reduce-scatter a step (time in them, per rank)",
                         collectives_text))
    rows += GPU_ROWS + memory_rows(summary)  # "n/a" where the machine does not say
    if any(r.warnings for r in runs):
        rows.append(("warnings", lambda r: "; ".join(r.warnings) or DASH))
    if any(r.profiles for r in runs):
        rows.append(("profiler captures", profiles_text))
    labels = [r.label for r in runs]
    # A restarted variant has several runs: name those columns by run id too.
    header = [""] + [f"{r.label} ({r.run})" if labels.count(r.label) > 1 else r.label for r in runs]
    return header, [[name] + [fn(r) for r in runs] for name, fn in rows]


def _done(r: RunStats) -> list[dict]:
    return [p for p in r.profiles if p.get("state") == "done"]


def syncs_text(p: dict, limit: int = 3) -> str:
    """The sync detector's findings of one capture (the runner's own loss read left out)."""
    found = [s for s in p.get("syncs") or [] if not s.get("ours")]
    if not found:
        return "no syncs or scalar reads"
    kinds = {"scalar_read": "scalar read", "device_sync": "device sync", "blocking_copy": "blocking copy"}
    parts = [f"{s['op']} ×{s['count']:g}/step at {s['where']}"
             + (f" in {short_name(s['context'])}" if s.get("context") else "")
             + f" ({kinds.get(s['kind'], s['kind'])})" for s in found[:limit]]
    more = f" and {len(found) - limit} more" if len(found) > limit else ""
    return "; ".join(parts) + more


def top_ops_text(p: dict, n: int = 3) -> str:
    ops = (p.get("top_ops") or [])[:n]
    return ", ".join(f"{short_name(o['name'])} {o['share']:.0%}" for o in ops) or DASH


def profiles_text(r: RunStats) -> str:
    if not r.profiles:
        return DASH
    done = _done(r)
    text = f"{len(done)} capture{'s' if len(done) != 1 else ''}"
    failed = [p for p in r.profiles if p not in done and not p.get("quiet")]  # quiet: the notes say
    if failed:
        text += f" ({len(failed)} failed)"
    if done:
        last = done[-1]
        top = (last.get("top_ops") or [{}])[0]
        if top:
            which = "last: " if len(done) > 1 else ""
            text += f"; {which}top op {short_name(top['name'])} ({top['share']:.0%} of the step)"
        n = last.get("sync_count") or 0
        text += f", {n:g} sync/scalar read(s) per step" if n else ", no syncs"
    return text


def profile_note(r: RunStats, p: dict) -> str:
    if p.get("state") != "done" and p.get("quiet"):
        return f"{r.label}: the automatic capture {p.get('capture')} recorded nothing: {p.get('error')}"
    if p.get("state") != "done":
        return f"{r.label}: profile {p.get('capture')} failed: {p.get('error')}"
    steps = p.get("active_steps") or []
    span = f"steps {steps[0]}–{steps[-1]}" if steps else "no active step"
    inside = p.get("recorded_median_ms")
    vs = f", {fmt_ms(inside)} per recorded step vs {fmt_ms(r.timing.median_ms)} steady" if inside else ""
    trace = f"; trace {p['trace']}" if p.get("trace") else ""
    return (f"{r.label}: profile {p['capture']} ({span}{vs}): top {top_ops_text(p)}; "
            f"{syncs_text(p)}{trace}")
