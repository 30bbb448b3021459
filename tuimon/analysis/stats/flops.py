"""FLOPs, achieved FLOP/s and MFU: a run's ``Flops`` record (records.py).

``counted(e)`` folds the runner's ``flops`` event (one extra step counted by torch's
FlopCounterMode, and this machine's measured GEMM peak: runner/flops.py, runner/peak_bench.py)
into the counts and peaks; ``flop_rates`` adds what the steps achieved once their medians are
known: a phase's FLOPs over its median time (stats/phases.py), the step's over the median step,
and MFU, each against the two peaks:

- the *measured* peak, the best this machine's GEMMs reached in the precision the FLOPs ran in;
- the *datasheet* peak of the device at that precision (tuimon/peaks.py), None on a CPU, for a
  device the table does not have, or a precision the device lacks: MFU then stands on the
  measured peak alone, and ``mfu_basis`` says why.

An MFU over 100 % is not a fact but a peak that does not fit the run (a wrong table entry, the
wrong precision, a phase timed shorter than its work): it is listed in ``mfu_over`` and the
views say so instead of the number. Decisions only: the words are report/flops_text.py's.
"""

from __future__ import annotations

from dataclasses import replace

from tuimon.analysis.stats.records import Flops, Phases, Timing
from tuimon.peaks import datasheet_peak

PHASES = ("forward", "backward", "optimizer")
PARTS = ("step", *PHASES)


def counted(e: dict) -> Flops:
    """The ``flops`` event's counts and measured peak (no rates yet: they need the steps)."""
    peak = e.get("peak") or {}
    precision = e.get("precision")
    measured = (peak.get("peaks") or {}).get(precision) if precision else None
    common = {"peak_measured": measured, "peak_measured_key": peak.get("key"),
              "peak_measured_error": e.get("peak_error")}
    if e.get("error"):
        return Flops(flops_error=str(e["error"]), **common)
    return Flops(flops_step=e.get("step"), flops_forward=e.get("forward"),
                 flops_backward=e.get("backward"), flops_optimizer=e.get("optimizer"),
                 flops_precision=precision, flops_calls=e.get("calls"),
                 flops_counted_on=e.get("counted_on"), flops_ops=dict(e.get("ops") or {}),
                 **common)


def _ratio(flops: int | None, ms: float | None) -> float | None:
    if not flops or not ms or ms <= 0:
        return None  # no FLOPs counted (0: nothing torch has a formula for) or no time
    return flops / (ms / 1000.0)


def flop_rates(f: Flops, timing: Timing, phases: Phases, device: str | None,
               device_name: str | None) -> Flops:
    """``f`` with its achieved FLOP/s and MFU, from the steady steps' medians (a new record)."""
    if f.flops_step is None:
        return f
    step_phases = phases.step_phases
    rates = {"step": _ratio(f.flops_step, timing.median_ms)}
    for name in PHASES:
        rates[name] = _ratio(getattr(f, f"flops_{name}"), (step_phases.get(name) or {}).get("median_ms"))
    on_cpu = not device or device.startswith("cpu")
    if on_cpu:
        sheet_name, sheet, lookup = None, None, "cpu"
    else:
        sheet_name, sheet, lookup = datasheet_peak(device_name, f.flops_precision)
    measured = f.peak_measured
    basis = _basis(on_cpu, lookup, measured, sheet)
    mfu: dict[str, float | None] = {}
    over = []
    for peak_name, peak in (("measured", measured), ("datasheet", sheet)):
        for part in PARTS:
            value = rates[part] / peak if rates[part] is not None and peak else None
            mfu[f"mfu_{peak_name}_{part}"] = value
            if value is not None and value > 1.0:
                over.append(f"{part}:{peak_name}")
    return replace(f, **{f"flop_s_{p}": rates[p] for p in PARTS}, peak_datasheet=sheet,
                   peak_device=sheet_name, peak_lookup=lookup, mfu_basis=basis, **mfu,
                   mfu_over=tuple(over))


def _basis(on_cpu: bool, lookup: str, measured: float | None, sheet: float | None) -> str | None:
    if on_cpu:
        return "measured-cpu" if measured else None
    if sheet and measured:
        return "both"
    if sheet:
        return "datasheet"
    if not measured:
        return None
    return "measured-no-precision" if lookup in ("no-precision", "no-precision-known") \
        else "measured-unknown-device"


def first_count(rows) -> Flops:
    """A combined row's counts (--repeats): its first process that counted (every process counts
    the same model at the same shapes); rates are then the combined row's own."""
    for r in rows:
        if r.flops.flops_step is not None or r.flops.flops_error:
            return replace(r.flops, **{f"flop_s_{p}": None for p in PARTS})
    return Flops()
