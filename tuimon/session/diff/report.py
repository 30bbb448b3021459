"""A comparison of sessions as data: for each variant they share, every figure in each session
and its change against the first session (the baseline), and the regression guard's verdict.
Numbers come from the sessions' summaries and ``stats.change``; this module only lays them out."""

from __future__ import annotations

from dataclasses import dataclass, field

from tuimon.session.diff.sessions import Key, Session, key_rows, label, matched
from tuimon.session.diff.settings import differences
from tuimon.session.fmt import DASH, fmt_bytes, fmt_loss, fmt_ms, fmt_rate, fmt_s
from tuimon.session.stats import RunStats
from tuimon.session.stats.change import (
    Change,
    load_differs,
    loss_drift,
    median_change,
    spread_change,
    step_losses,
)
from tuimon.session.table import (
    cache_text,
    cpu_text,
    faults_text,
    graphs_text,
    measured_text,
    other_load_text,
    speedup_text,
)

PHASES = ("dynamo", "aot", "inductor", "codegen", "backward")


@dataclass
class Metric:
    name: str
    values: list[str]  # per session, as text
    changes: list[Change | None]  # per session against the baseline (None for the baseline)
    kind: str = "time"  # how a change reads: time (slower / faster), size (more / less), other


@dataclass
class VariantDiff:
    key: Key
    rows: list[RunStats | None]  # per session (None: not in that session)
    median: list[Change | None]
    compile: list[Change | None]
    unreliable: list[str | None]  # per session: other processes' load differed from A's
    metrics: list[Metric] = field(default_factory=list)

    @property
    def label(self) -> str:
        return label(self.key)


@dataclass
class Comparison:
    sessions: list[Session]
    differences: list[tuple[str, list[str]]]
    variants: list[VariantDiff]
    left_out: list[str]

    @property
    def notes(self) -> list[str]:
        return [n for s in self.sessions for n in s.notes]


def compare_sessions(sessions: list[Session]) -> Comparison:
    key_rows(sessions)
    keys, left_out = matched(sessions)
    return Comparison(sessions, differences(sessions), [_variant(sessions, k) for k in keys], left_out)


def _variant(sessions: list[Session], key: Key) -> VariantDiff:
    rows = [s.rows.get(key) for s in sessions]
    base = rows[0]

    def against(fn) -> list[Change | None]:
        return [None] + [fn(base, r, s) if r is not None else None for r, s in zip(rows[1:], sessions[1:],
                                                                                     strict=True)]

    def processes(s: Session, r: RunStats, attr: str) -> list[float]:
        if not r.processes:
            return [getattr(r, attr)]
        runs = {p["run"] for p in r.processes}
        return [getattr(x, attr) for x in s.summary.runs if x.run in runs]

    def spread(attr: str):
        return lambda b, r, s: spread_change(processes(sessions[0], b, attr), processes(s, r, attr))

    v = VariantDiff(key, rows, against(lambda b, r, s: median_change(b, r)), against(spread("compile_s")),
                    against(lambda b, r, s: load_differs(b, r)))

    def metric(name: str, text, changes=None, kind: str = "time") -> None:
        values = [text(r) if r is not None else "not run" for r in rows]
        v.metrics.append(Metric(name, values, changes or [None] * len(rows), kind))

    if any(r is not None and r.status != "done" for r in rows):
        metric("status", lambda r: r.status + (f": {r.error}" if r.error else ""))
    metric("steps measured", measured_text)
    metric("median step (p10–p90)", lambda r: DASH if r.median_ms is None else
           f"{fmt_ms(r.median_ms)} ({fmt_ms(r.p10_ms)}–{fmt_ms(r.p90_ms)})", v.median)
    metric("throughput", lambda r: fmt_rate(r.throughput, r.throughput_unit))
    metric("speedup vs eager (in its session)", speedup_text)
    if any(r is not None and r.compiled for r in rows):
        metric("compile time", lambda r: fmt_s(r.compile_s), v.compile)
        for phase in PHASES:
            if any(r is not None and r.compile_phases.get(phase) for r in rows):
                metric(f"compile: {phase}", lambda r, p=phase: fmt_s(r.compile_phases.get(p)),
                       against(lambda b, r, s, p=phase: spread_change([b.compile_phases.get(p)],
                                                                      [r.compile_phases.get(p)])))
        metric("graphs / breaks / recompiles", graphs_text)
        metric("Inductor cache", cache_text)
    metric("peak RSS", lambda r: fmt_bytes(r.peak_rss), against(spread("peak_rss")), "size")
    for attr, name in (("cuda_peak_allocated", "CUDA peak allocated"), ("vram_max", "VRAM used (NVML peak)")):
        if any(r is not None and getattr(r, attr) for r in rows):
            metric(name, lambda r, a=attr: fmt_bytes(getattr(r, a)), against(spread(attr)), "size")
    if any(r is not None and r.faults_per_step is not None for r in rows):  # stats/faults.py
        metric("page faults per step", faults_text)
    metric("final loss", lambda r: DASH if r.final_loss is None else fmt_loss(r.final_loss))
    drift = _loss_drift(sessions, rows)
    if any(drift):
        v.metrics.append(Metric("loss vs A, same steps", drift, [None] * len(rows), "other"))
    metric("CPU, process tree (100 % = 1 core)", cpu_text)
    metric("other processes while it stepped", other_load_text)
    if any(r is not None and r.gpu_util_mean is not None for r in rows):
        metric("GPU util (mean)", lambda r: DASH if r.gpu_util_mean is None else f"{r.gpu_util_mean:.0f} %")
    return v


def _loss_drift(sessions: list[Session], rows: list[RunStats | None]) -> list[str]:
    def runs(r: RunStats) -> set[str]:
        return {p["run"] for p in r.processes} if r.processes else {r.run}

    if rows[0] is None:
        return []
    base = step_losses(sessions[0].events, runs(rows[0]))
    out = [""]
    for s, r in zip(sessions[1:], rows[1:], strict=True):
        diff, common = loss_drift(base, step_losses(s.events, runs(r))) if r is not None else (None, 0)
        out.append("" if diff is None else f"max |Δ| {diff:.2g} over {common} steps")
    return out if any(out) else []


def guard(c: Comparison, slower_pct: float | None, compile_pct: float | None) -> tuple[list[str], list[str]]:
    """(failures, what could not be judged). A median step fails when its change is beyond noise
    and above ``slower_pct``; a compile time when above ``compile_pct`` and not within the
    spread between processes (with one process a session there is no spread to judge by, so
    the change itself counts)."""
    failures, unjudged = [], []
    for v in c.variants:
        for s, m, comp, shaky in zip(c.sessions[1:], v.median[1:], v.compile[1:], v.unreliable[1:],
                                     strict=True):
            who = f"{v.label} in {s.letter} vs A" + (" (unreliable: other processes' load differed)"
                                                      if shaky else "")
            if slower_pct is not None and m is not None:
                if m.significant is None:
                    unjudged.append(f"{who}: no interval for the median step (too few steady steps)")
                elif m.significant and m.pct > slower_pct:
                    failures.append(f"{who}: median step {change_text(m)}, more than "
                                    f"--fail-if-slower {slower_pct:g} %")
            if compile_pct is not None and comp is not None and comp.significant is not False \
                    and comp.pct > compile_pct:
                failures.append(f"{who}: compile time {change_text(comp)}, more than "
                                f"--fail-if-compile-slower {compile_pct:g} %")
    return failures, unjudged


def change_text(c: Change | None, kind: str = "time") -> str:
    """'+12.3 % (95 % CI +8.1 to +16.6 %), slower' / '-0.4 % (...), within noise' / '+5.0 %'."""
    if c is None:
        return ""
    text = f"{c.pct:+.1f} %"
    if c.lo is None:
        return text
    text += f" (95 % CI {(c.lo - 1) * 100:+.1f} to {(c.hi - 1) * 100:+.1f} %)"
    if not c.significant:
        return text + ", within noise"
    words = {"time": ("slower", "faster"), "size": ("more", "less")}.get(kind, ("up", "down"))
    return text + f", {words[0] if c.ratio > 1 else words[1]}"


def headline(c: Comparison) -> list[str]:
    """One line per variant and session: the median step's change, and the compile time's."""
    out = []
    for v in c.variants:
        for s, m, comp, shaky in zip(c.sessions[1:], v.median[1:], v.compile[1:], v.unreliable[1:],
                                     strict=True):
            if v.rows[c.sessions.index(s)] is None:
                continue
            parts = [f"median step {change_text(m)}" if m is not None else "median step: not measured"]
            if comp is not None:
                parts.append(f"compile time {change_text(comp)}")
            if shaky:
                parts.append(f"unreliable: {shaky}")
            out.append(f"{v.label}, {s.letter} vs A: " + "; ".join(parts))
    return out
