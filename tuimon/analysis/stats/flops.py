"""FLOPs, achieved FLOP/s and MFU: a run's ``Flops`` record (records.py;
docs/measuring.md#flops-peaks-and-mfu). ``counted(e)`` folds the runner's ``flops`` event into
the counts and the measured and datasheet peaks; ``flop_rates`` adds what the steps achieved
once their medians are known. An MFU over 100 % is a peak that does not fit the run, listed in
``mfu_over`` instead of stated. Decisions only: the words are report/flops_text.py's."""

from __future__ import annotations

from dataclasses import replace

from tuimon.analysis.stats.records import Flops, PhaseFlops, Phases, Timing
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
        return Flops(error=str(e["error"]), **common)
    return Flops(step=PhaseFlops(e.get("step")),
                 phases={name: PhaseFlops(e.get(name)) for name in PHASES},
                 precision=precision, calls=e.get("calls"), backed=e.get("backed"),
                 uncounted=tuple(e.get("uncounted") or ()), counted_on=e.get("counted_on"),
                 ops=dict(e.get("ops") or {}), **common)


def _ratio(flops: int | None, ms: float | None) -> float | None:
    if not flops or not ms or ms <= 0:
        return None  # no FLOPs counted (0: nothing torch has a formula for) or no time
    return flops / (ms / 1000.0)


def flop_rates(f: Flops, timing: Timing, phases: Phases, device: str | None,
               device_name: str | None, doubts=()) -> Flops:
    """``f`` with its achieved FLOP/s and MFU, from the steady steps' medians (a new record);
    none when part of what the step trains was not counted (``uncounted``), or when the row's
    reading found several models trained one after another (``doubts``: stats/anatomy.py)."""
    models = next((tuple(d.get("modules") or ()) for d in doubts if d.code == "trainings"), ())
    if models and f.counted:
        return replace(f, trainings=models)
    if not f.counted or f.uncounted:
        return f
    medians = {"step": timing.median_ms}
    medians.update({name: (phases.step_phases.get(name) or {}).get("median_ms") for name in PHASES})
    on_cpu = not device or device.startswith("cpu")
    if on_cpu:
        sheet_name, sheet, lookup = None, None, "cpu"
    else:
        sheet_name, sheet, lookup = datasheet_peak(device_name, f.precision)
    measured = f.peak_measured
    rates = {part: _ratio(f.part(part).flops, medians[part]) for part in PARTS}
    mfu = {(part, peak_name): rates[part] / peak if rates[part] is not None and peak else None
           for peak_name, peak in (("measured", measured), ("datasheet", sheet)) for part in PARTS}
    parts = {part: PhaseFlops(f.part(part).flops, rates[part], mfu[part, "measured"],
                              mfu[part, "datasheet"]) for part in PARTS}
    over = tuple(f"{part}:{peak}" for (part, peak), value in mfu.items()
                 if value is not None and value > 1.0)
    return replace(f, step=parts.pop("step"), phases=parts, peak_datasheet=sheet,
                   peak_device=sheet_name, peak_lookup=lookup,
                   mfu_basis=_basis(on_cpu, lookup, measured, sheet), mfu_over=over)


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
        if r.flops.counted or r.flops.error:
            f = r.flops
            return replace(f, step=PhaseFlops(f.step.flops),
                           phases={name: PhaseFlops(p.flops) for name, p in f.phases.items()})
    return Flops()
