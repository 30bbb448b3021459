"""Memory per phase and energy in words: the summary table's rows, summary.json's words beside
the codes, the panel's short line. The figures and decisions come from analysis/stats/memory.py
and energy.py; only their wording is here (docs/measuring.md says what they mean)."""

from __future__ import annotations

from tuimon.analysis import Point, RunStats, SessionSummary, columns
from tuimon.fmt import DASH, fmt_bytes, fmt_joules, fmt_s

SHORT = {"data": "data", "forward": "fwd", "backward": "bwd", "optimizer": "opt", "eval": "eval",
         "other": "other"}
ORDER = ("forward", "backward", "optimizer", "data", "eval", "other")
NA = {"cpu": "n/a (CPU: the allocator's counters are CUDA's; RSS in peak memory)",
      "short": "not measured (the run ended before its memory steps)",
      "unread": "not measured (no memory step in this session's events)"}
SOURCES = {"nvml-counter": "NVML energy counter", "nvml-power": "NVML power × time",
           "rapl": "RAPL"}


def _phases(r: RunStats) -> list[tuple[str, dict]]:
    got = r.memory.mem_phases
    return [(name, got[name]) for name in ORDER if name in got]


def phases_cell(r: RunStats) -> str:
    """'fwd 1.2 GiB · bwd 2.0 GiB · opt 1.5 GiB (weights and state 0.9 GiB)'"""
    m = r.memory
    if m.mem_na:
        return NA.get(m.mem_na, "n/a")
    if not m.mem_phases:
        return DASH
    text = " · ".join(f"{SHORT[name]} {fmt_bytes(f.get('peak'))}" for name, f in _phases(r))
    return text + (f" (at the step's start {fmt_bytes(m.mem_base)})" if m.mem_base else "")


def change_cell(r: RunStats) -> str:
    """'fwd −310 MiB (saved) · bwd +2.0 MiB (same) · opt +0 B (same)'"""
    parts = []
    for name, f in _phases(r):
        if f.get("change") is None:
            continue
        delta = f["vs_baseline"]
        sign = "−" if delta < 0 else "+"
        parts.append(f"{SHORT[name]} {sign}{fmt_bytes(abs(delta)) if delta else '0 B'} ({f['change']})")
    return " · ".join(parts) or DASH


def pool_cell(r: RunStats) -> str:
    m = r.memory
    if not r.compiled or m.mem_na == "cpu":
        return DASH
    if m.graph_pool_unread:
        return f"cannot tell ({m.graph_pool_unread})"
    if m.graph_pool is None:
        return DASH
    if m.graph_pool == 0:
        return "none (no CUDA graphs)"
    used = f", {fmt_bytes(m.graph_pool_used)} in use" if m.graph_pool_used else ""
    return f"{fmt_bytes(m.graph_pool)} reserved{used}"


FIT_WHY = {
    "graph_pool": "cannot tell: CUDA graphs hold the activations in their own pool, which the "
                  "phases do not see",
    "no_growth": "cannot tell: no phase grew above the step's fixed memory",
    "no_budget": "cannot tell: torch did not say the device's free memory",
    "over_budget": "cannot tell: a phase's peak is above what the process could hold",
}


def fit_cell(r: RunStats) -> str:
    """'~2.0× today's batch (1.4 GiB of 80 GiB free)' or why it cannot be told."""
    m = r.memory
    if m.mem_na:
        return "n/a" if m.mem_na == "cpu" else DASH
    if m.batch_fit is not None:  # rounded down by analysis: tenths below 10×, whole above
        of = f" (device {fmt_bytes(m.mem_total)})" if m.mem_total else ""
        return f"~{m.batch_fit:g}× today's{of}"
    return FIT_WHY.get(m.batch_fit_why.code, "cannot tell") if m.batch_fit_why else DASH


def energy_why(p: Point | None) -> str:
    if p is None:
        return DASH
    if p.code == "rapl":
        return f"n/a: {p.get('reason')}"
    if p.code == "no_sensor":
        return ("n/a: this GPU reports neither energy nor power" if p.get("device") == "gpu"
                else "n/a: no energy counter on this machine")
    if p.code == "which_gpu":
        return ("n/a: NVML read no GPU" if not p.get("devices") else
                "cannot tell: NVML does not see its process, and this machine has several GPUs")
    return {"no_samples": "n/a: no probe samples",
            "shared": "cannot tell: it never stepped alone on its device (other runs or "
                      "processes beside it)",
            "no_steady": "cannot tell: no steady steps"}.get(p.code, "cannot tell")


def per_step_cell(r: RunStats) -> str:
    e = r.energy
    if e.joules_per_step is None:
        return energy_why(e.energy_why)
    source = SOURCES.get(e.energy_source or "", e.energy_source)  # set with joules_per_step
    return (f"{fmt_joules(e.joules_per_step)} ({source}; {e.energy_steps:,} steps alone, "
            f"{fmt_s(e.energy_s)})")


def per_run_cell(r: RunStats) -> str:
    e = r.energy
    if e.joules_run is not None:
        return f"{fmt_joules(e.joules_run)} (its whole life, compiles included)"
    if e.energy_source is None:
        return "n/a"  # why: said once, in the per-step row
    return "cannot tell: other runs (or processes) shared its device"


# A row each, in the table, the page and summary.json's words alike: (its key in the words, its
# name, its cell).
MEMORY = (("phases", "memory per phase (allocator peak)", phases_cell),
          ("vs_baseline", "memory per phase vs eager", change_cell),
          ("graph_pool", "CUDA-graph pool", pool_cell),
          ("batch_fit", "largest batch that would fit (if activations grow with it)", fit_cell))
ENERGY = (("per_step", "energy per step", per_step_cell), ("per_run", "energy per run", per_run_cell))


def memory_rows(summary: SessionSummary) -> list[tuple[str, object]]:
    """The table's rows: memory per phase (always: n/a on a CPU), what compile changed, the
    graph pool and the batch that would fit where a run had them; energy per step and run."""
    runs = columns(summary)
    shown = {"vs_baseline": any(change_cell(r) != DASH for r in runs),
             "graph_pool": any(pool_cell(r) != DASH for r in runs),
             "batch_fit": any(r.memory.mem_phases for r in runs)}
    return [(name, cell) for key, name, cell in (*MEMORY, *ENERGY) if shown.get(key, True)]


def row_words(r: RunStats) -> dict:
    """summary.json's words of a row's memory and energy (their codes: ``memory.batch_fit_why``,
    ``energy.energy_why``)."""
    return {"memory": {key: cell(r) for key, _, cell in MEMORY},
            "energy": {key: cell(r) for key, _, cell in ENERGY}}


def panel_text(r: RunStats | None) -> str:
    """The panel's few words beside VRAM: ' · fits ~2.0× batch · 1.2 J/step' (or '')."""
    if r is None:
        return ""
    out = ""
    if r.memory.batch_fit is not None:
        out += f" · fits ~{r.memory.batch_fit:g}× batch"
    if r.energy.joules_per_step is not None:
        out += f" · {fmt_joules(r.energy.joules_per_step)}/step"
    return out
