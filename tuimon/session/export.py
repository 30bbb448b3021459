"""summary.md, summary.json and steps.csv, from the session directory alone."""

from __future__ import annotations

import contextlib
import csv
import datetime
import io
import json
import os
from pathlib import Path

from tuimon import events
from tuimon.session import store
from tuimon.session.stats import RunStats, SessionSummary, summarize

DASH = "–"


def load(path: str | Path, unwritten: list[dict] | None = None,
         stored: tuple[list[dict], int] | None = None) -> tuple[dict, list[dict], SessionSummary]:
    """The session as stored (``stored``: already read, e.g. by ``SessionStore.read_back``), plus
    ``unwritten``: events a failed write kept in memory only."""
    meta = store.read_meta(path)
    evs, bad = stored if stored is not None else store.read_events(path)
    evs = evs + (unwritten or [])
    return meta, evs, summarize(evs, bad)


def fmt_ms(ms: float | None) -> str:
    if ms is None:
        return DASH
    if ms >= 1000:
        return f"{ms / 1000:.2f} s"
    decimals = 3 if ms < 1 else 2 if ms < 10 else 1 if ms < 100 else 0
    return f"{ms:.{decimals}f} ms"


def fmt_s(s: float | None) -> str:
    if s is None:
        return DASH
    if s >= 120:
        return f"{s / 60:.1f} min"
    return f"{s:.1f} s" if s >= 1 else f"{s * 1000:.0f} ms"


def fmt_bytes(n: int | None) -> str:
    if not n:
        return DASH
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return DASH


def status_text(r: RunStats) -> str:
    if r.error:
        return f"{r.status}: {r.error}"
    if r.hung_s is not None:
        return f"{r.status} while hung (no step for {fmt_s(r.hung_s)})"
    return r.status


def failure_notes(r: RunStats, lines: int = 12) -> list[str]:
    """A failed run's kind, after how many steps, and the tail of its traceback or log."""
    if r.status != "failed":
        return []
    kind = f" ({r.failure_kind})" if r.failure_kind else ""
    steps = f"{r.steps} recorded step{'s' if r.steps != 1 else ''}"
    out = [f"- {r.label}{kind}: failed after {steps}: {r.error}; log: logs/{r.run}.log"]
    if r.failure_tail:
        tail = r.failure_tail.rstrip().splitlines()
        fatal = next((i for i, line in enumerate(tail) if line.startswith("Fatal Python error")), None)
        # faulthandler's report whole (its header names the signal; a thread's stack follows
        # another's), else the last lines of the traceback or log.
        tail = tail[fatal:][:3 * lines] if fatal is not None else tail[-lines:]
        out += ["", "  ```", *(f"  {line}" for line in tail), "  ```", ""]
    return out


def breakeven_text(r: RunStats) -> str:
    if not r.compiled:
        return DASH
    if r.breakeven_never:
        return "never (not faster per step)"
    if r.breakeven_steps is None:
        return DASH
    if r.breakeven_steps == 0:
        return "at once"
    text = f"{r.breakeven_steps:,} steps (≈ {fmt_s(r.breakeven_s)})"
    if r.breakeven_lo is not None:
        hi = f"{r.breakeven_hi:,}" if r.breakeven_hi is not None else "never"
        text += f", range {r.breakeven_lo:,}–{hi}"
    return text


def peak_memory_text(r: RunStats) -> str:
    if r.cuda_peak_allocated:
        return f"{fmt_bytes(r.cuda_peak_allocated)} CUDA alloc ({fmt_bytes(r.cuda_peak_reserved)} reserved)"
    return f"{fmt_bytes(r.peak_rss)} RSS" if r.peak_rss else DASH


def compile_text(r: RunStats) -> str:
    if r.overhead_s is None and r.compile_s is None:
        return DASH
    warm = fmt_s(r.overhead_s)
    if r.compiled and r.compile_s is not None:
        return f"{warm} (compile {fmt_s(r.compile_s)})"
    return warm


def loss_text(r: RunStats) -> str:
    if r.final_loss is None:
        return DASH
    text = fmt_loss(r.final_loss)
    if r.baseline and r.baseline != r.label and r.max_loss_diff is not None:
        text += f" (max Δ {r.max_loss_diff:.2g} vs {r.baseline} over {r.common_steps} steps)"
    return text


def fmt_loss(x: float) -> str:
    return f"{x:.4f}" if 1e-3 <= abs(x) < 1e4 else f"{x:.3e}"


def speedup_text(r: RunStats) -> str:
    if r.speedup is None:
        return DASH
    text = f"{r.speedup:.2f}×"
    if r.speedup_lo is not None:
        text += f" (95 % CI {r.speedup_lo:.2f}–{r.speedup_hi:.2f})"
        if r.within_noise:
            text += ", within noise"
    if r.unreliable:
        text += " — unreliable"
    return text


def measured_text(r: RunStats) -> str:
    text = f"{r.measured} of {r.steps}"
    if r.processes:
        return text + f", in {len(r.processes)} processes"
    if r.steady_from is not None:
        text += f" (steady from step {r.steady_from}{', detected' if r.warmup_auto else ''})"
    if r.turns > 1:
        text += f", in {r.turns} turns"
    return text


def processes_text(r: RunStats) -> str:
    """A combined row's processes: their medians, the spread the interval accounts for."""
    if not r.processes:
        return DASH
    return " · ".join(fmt_ms(p["median_ms"]) if p["median_ms"] else p["status"] for p in r.processes)


def columns(summary: SessionSummary) -> list[RunStats]:
    """What the table compares: with --repeats a variant's processes as one combined column, and
    any run outside the rounds (a restart) on its own."""
    if not summary.variants:
        return summary.runs
    return summary.variants + [r for r in summary.runs if r.replicate is None]


def cpu_text(r: RunStats) -> str:
    if r.cpu_mean is None and r.tree_rss_max is None:
        return DASH
    parts = [f"{r.cpu_mean:.0f} % mean, {r.cpu_max:.0f} % max" if r.cpu_mean is not None else "",
             f"RSS {fmt_bytes(r.tree_rss_max)}" if r.tree_rss_max else "",
             f"{r.children_max} child proc." if r.children_max else ""]
    return ", ".join(p for p in parts if p)


def throttle_text(r: RunStats) -> str:
    if r.throttled_share is None:
        return "n/a"
    if not r.throttle_reasons:
        return "no"
    why = ", ".join(sorted(r.throttle_reasons, key=r.throttle_reasons.get, reverse=True))
    return f"{r.throttled_share:.0%} of the time ({why})"


def phases_text(r: RunStats) -> str:
    if not r.compiled or not r.compile_phases:
        return DASH
    p = r.compile_phases
    fwd = " · ".join(f"{name} {fmt_s(p[name])}" for name in ("dynamo", "aot", "inductor", "codegen")
                     if p.get(name))
    bwd = f"; backward {fmt_s(p['backward'])}" if p.get("backward") else ""
    return f"{fwd}{bwd}"


def graphs_text(r: RunStats) -> str:
    if not r.compiled or not (r.graphs_fwd or r.graphs_bwd):
        return DASH
    breaks = sum(1 for _ in r.graph_breaks)
    return (f"{r.graphs_fwd} fwd + {r.graphs_bwd} bwd graphs · {breaks} graph break"
            f"{'' if breaks == 1 else 's'} · {r.recompiles} recompile{'' if r.recompiles == 1 else 's'}")


def top_break_text(r: RunStats) -> str:
    if not r.graph_breaks:
        return DASH
    b = r.graph_breaks[0]
    reason = b["reason"] if len(b["reason"]) <= 90 else b["reason"][:89] + "…"
    return f"{b['where']}: {reason}"


def cache_text(r: RunStats) -> str:
    if not r.compiled or not (r.fx_cache_hits or r.fx_cache_misses):
        return DASH
    if r.fx_cache_hits and not r.fx_cache_misses:
        return f"warm: {r.fx_cache_hits} FX-graph cache hits"
    if r.fx_cache_misses and not r.fx_cache_hits:
        return f"cold: {r.fx_cache_misses} FX-graph cache misses"
    return f"mixed: {r.fx_cache_hits} hits, {r.fx_cache_misses} misses"


def _or_na(value, fmt) -> str:
    return "n/a" if value is None else fmt(value)


GPU_ROWS = [
    ("GPU util (mean)", lambda r: _or_na(r.gpu_util_mean, lambda v: f"{v:.0f} %")),
    ("VRAM used (NVML peak)", lambda r: _or_na(r.vram_max, fmt_bytes)
     + (f" (run: {fmt_bytes(r.gpu_proc_mem_max)})" if r.gpu_proc_mem_max else "")),
    ("GPU temperature (max)", lambda r: _or_na(r.temp_max, lambda v: f"{v:.0f} °C")),
    ("GPU power (mean)", lambda r: _or_na(r.power_mean, lambda v: f"{v:.0f} W")),
    ("throttled", throttle_text),
]


def table(summary: SessionSummary) -> tuple[list[str], list[list[str]]]:
    """The blog-post table: header and rows, shared by markdown and the terminal."""
    runs = columns(summary)
    rows = [
        ("status", status_text),
        ("steps measured", measured_text),
        ("median step (p10–p90)", lambda r: DASH if r.median_ms is None else
         f"{fmt_ms(r.median_ms)} ({fmt_ms(r.p10_ms)}–{fmt_ms(r.p90_ms)})"),
        ("throughput", lambda r: DASH if r.throughput is None else f"{r.throughput:,.1f} samples/s"),
        ("speedup vs eager", speedup_text),
        ("compile / warm-up time", compile_text),
        ("compile pays off after", breakeven_text),
        ("compile time by phase", phases_text),
        ("graphs / breaks / recompiles", graphs_text),
        ("top graph break", top_break_text),
        ("Inductor cache", cache_text),
        ("peak memory", peak_memory_text),
        ("final loss (same seed, same batches)", loss_text),
        ("CPU, process tree (100 % = 1 core)", cpu_text),
    ]
    if summary.variants:
        rows.insert(3, ("median step per process", processes_text))
    rows += GPU_ROWS  # "n/a" where there is no GPU, no driver, or the device does not say
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


def short_name(name: str, width: int = 40) -> str:
    """An op name for one line (compiled graphs are named '## Call CompiledFxGraph <hash> ##')."""
    name = name.strip("# ").replace("Call CompiledFxGraph", "CompiledFxGraph")
    return name if len(name) <= width else name[:width - 1] + "…"


def top_ops_text(p: dict, n: int = 3) -> str:
    ops = (p.get("top_ops") or [])[:n]
    return ", ".join(f"{short_name(o['name'])} {o['share']:.0%}" for o in ops) or DASH


def profiles_text(r: RunStats) -> str:
    if not r.profiles:
        return DASH
    done = _done(r)
    text = f"{len(done)} capture{'s' if len(done) != 1 else ''}"
    if len(r.profiles) > len(done):
        text += f" ({len(r.profiles) - len(done)} failed)"
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
    if p.get("state") != "done":
        return f"{r.label}: profile {p.get('capture')} failed: {p.get('error')}"
    steps = p.get("active_steps") or []
    span = f"steps {steps[0]}–{steps[-1]}" if steps else "no active step"
    inside = p.get("recorded_median_ms")
    vs = f", {fmt_ms(inside)} per recorded step vs {fmt_ms(r.median_ms)} steady" if inside else ""
    trace = f"; trace {p['trace']}" if p.get("trace") else ""
    return (f"{r.label}: profile {p['capture']} ({span}{vs}): top {top_ops_text(p)}; "
            f"{syncs_text(p)}{trace}")


def to_markdown(meta: dict, summary: SessionSummary) -> str:
    header, rows = table(summary)
    out = [f"# tuimon session {meta.get('name', '')}".rstrip(), ""]
    if meta:
        out += [f"- recipe: `{meta.get('recipe', '?')}`",
                f"- command: `{' '.join(meta.get('argv', []))}`",
                f"- host: {meta.get('host', '?')}, torch {meta.get('torch', '?')}, "
                f"started {meta.get('started', '?')}",
                f"- device: {device_line(summary)}",
                f"- Inductor cache: {meta.get('cache', '?')}", ""]
    out.append("| " + " | ".join(header) + " |")
    out.append("|" + "---|" * len(header))
    out += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in rows]
    notes = [f"- {r.label}: {n}" for r in columns(summary) for n in r.notes]
    notes += [f"- {profile_note(r, p)}" for r in summary.runs for p in r.profiles]
    if summary.gpu_available is False:
        notes.append(f"- GPU metrics: n/a ({summary.gpu_reason})")
    if summary.unsupported:
        notes.append(f"- GPU metrics this device does not report: {', '.join(summary.unsupported)}")
    notes += [f"- warning: {w}" for w in summary.warnings]
    for r in summary.runs:
        notes += failure_notes(r)
    for r in columns(summary):
        notes += [f"- {r.label}: graph break at {b['where']} (×{b['count']}): {b['reason']}"
                  for b in r.graph_breaks[1:]]
        notes += [f"- {r.label}: recompile: {reason}" for reason in r.recompile_reasons]
        if r.unreliable:
            notes.append(f"- {r.label}: unreliable: {r.unreliable}")
    if summary.unreadable_lines:
        notes.append(f"- {summary.unreadable_lines} unreadable line(s) in events.jsonl were skipped")
    if notes:
        out += ["", "Notes:", *notes]
    out += ["", "Median over steady-state steps (warm-up, found in the data by MSER-5 unless fixed, and "
            "any step that compiled are kept apart); speedup against eager of the same precision, "
            "with a 95 % interval from order statistics widened for correlated neighbouring steps."]
    if summary.variants:
        out[-1] += (" Each variant ran in several processes (--repeats): its median is the geometric "
                    "mean of theirs, and its interval a Student's t interval over them, so it covers "
                    "the spread between processes too.")
    else:
        out[-1] += (" The interval covers step-to-step noise within one process, not the spread "
                    "between processes: --repeats 3 or more measures that.")
    if any(r.profiled_steps for r in summary.runs):
        out[-1] += " Steps a profiler capture recorded are kept apart too (the profiler slows them)."
    return "\n".join(out) + "\n"


def device_line(summary: SessionSummary) -> str:
    names = {f"{r.device} ({r.device_name})" for r in summary.runs if r.device}
    return ", ".join(sorted(names)) or "?"


def to_json(meta: dict, summary: SessionSummary) -> str:
    return json.dumps({"meta": meta, **summary.to_dict()}, indent=2, default=str) + "\n"


STEP_COLUMNS = ["run", "mode", "precision", "i", "t", "ms", "data_ms", "n", "loss", "phase",
                "compile_ms"]


def to_csv(session_events: list[dict], summary: SessionSummary) -> str:
    variant = {r.run: (r.mode, r.precision) for r in summary.runs}
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(STEP_COLUMNS)
    for e in session_events:
        if e["type"] != events.STEP:
            continue
        mode, precision = variant.get(e.get("run"), ("", ""))
        row = {**e, "mode": mode, "precision": precision}
        writer.writerow(["" if row.get(c) is None else row.get(c) for c in STEP_COLUMNS])
    return buf.getvalue()


FORMATS = {"md": "summary.md", "json": "summary.json", "csv": "steps.csv"}


def finish(path: str | Path, status: str, *, stored: tuple[list[dict], int] | None = None,
           unwritten: list[dict] | None = None, error: str | None = None
           ) -> tuple[dict, SessionSummary, dict[str, Path]]:
    """End of a session: the summary files from the store alone, then the final meta.json status
    (last, so that a status other than "running" means the summary is there).

    ``stored``: the events as the store's open file holds them (``read_back``). After a store
    failure (``error``): ``unwritten`` (the events that never reached the file) count in the
    summary too, and what cannot be written now (a full disk) is skipped, not raised: the summary
    is still returned, and ``written`` holds only the files that made it. Without a store failure,
    a summary that cannot be written raises StoreWriteError (one line)."""
    path = Path(path)
    meta, evs, summary = load(path, unwritten, stored)
    meta.update(status=status, ended=datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
                devices=device_line(summary), gpu=summary.gpu_reason or summary.gpu_available)
    if error:
        meta["error"] = error
    written: dict[str, Path] = {}
    try:
        write(path, meta, evs, summary, written)
        store.write_json_atomic(path / store.META, meta)
    except OSError as exc:
        if not error:
            raise store.StoreWriteError(f"cannot write the summary into {path}: "
                                        f"{exc.strerror or exc}") from None
    return meta, summary, written


def write_all(path: str | Path) -> dict[str, Path]:
    """(Re)write every export into the session directory; returns format -> file."""
    return write(Path(path), *load(path))


def write(path: Path, meta: dict, evs: list[dict], summary: SessionSummary,
          written: dict[str, Path] | None = None) -> dict[str, Path]:
    """Each file whole or not at all (a full disk leaves the old one); ``written`` fills as
    they land, so a caller that catches the OSError knows which did."""
    texts = {"md": to_markdown(meta, summary), "json": to_json(meta, summary),
             "csv": to_csv(evs, summary)}
    written = {} if written is None else written
    for fmt, text in texts.items():
        target = path / FORMATS[fmt]
        tmp = target.with_name(target.name + ".tmp")
        try:
            tmp.write_text(text, encoding="utf-8")
            os.replace(tmp, target)
        except OSError:
            with contextlib.suppress(OSError):
                tmp.unlink()
            raise
        written[fmt] = target
    return written
