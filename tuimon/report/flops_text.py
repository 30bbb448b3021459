"""FLOPs, FLOP/s and MFU in words (analysis/stats/flops.py decides; only the wording is here):
the summary table's rows, the document's FLOPs section (summary.md's, the page's, the terminal's
notes, summary.json's words), the panel's line ("fwd 1.2 TFLOP/s · 31 % of measured peak").

An MFU over 100 % is never printed as a figure: it reads "over 100 %: the peak does not fit"."""

from __future__ import annotations

from tuimon.analysis import RunStats, SessionSummary, columns
from tuimon.fmt import DASH, fmt_flops, fmt_small_pct
from tuimon.report.document import FIGURES, NOTE, TEXT, Line, Section

PHASES = ("forward", "backward", "optimizer")
SHORT = {"step": "step", "forward": "fwd", "backward": "bwd", "optimizer": "opt"}
BASIS = {  # what MFU stands on, when it is not both peaks
    "measured-cpu": "a CPU: no datasheet peak, the measured peak stands alone",
    "measured-unknown-device": "device not in tuimon's peak table: MFU against the measured peak",
    "measured-no-precision": "no datasheet peak for this precision on this device: MFU against "
                             "the measured peak",
    "datasheet": "no measured peak: MFU against the datasheet's",
}


def fmt_mfu(x: float | None, over: bool = False) -> str:
    """'31 %', '4.2 %', '0.07 %'; one analysis found over 100 % (``over``) is a wrong peak,
    said so instead of the figure."""
    if x is None:
        return DASH
    return "over 100 % (the peak does not fit)" if over else fmt_small_pct(x)


def _mfu_of(r: RunStats, peak: str, part: str) -> float | None:
    return getattr(r.flops.part(part), f"mfu_{peak}")


def _mfu(r: RunStats, peak: str, part: str) -> str:
    return fmt_mfu(_mfu_of(r, peak, part), f"{part}:{peak}" in r.flops.mfu_over)


def counts_cell(r: RunStats) -> str:
    """'15.2 MFLOP (fwd 5.41 M · bwd 9.76 M · opt 0) · fp32'"""
    f = r.flops
    if f.error:
        return f"not counted: {f.error}"
    if not f.counted:
        return DASH
    parts = [f"{SHORT[n]} {_short(f.part(n).flops)}" for n in PHASES if f.part(n).flops is not None]
    calls = ""
    if f.calls and f.calls > 1:
        calls = f" · ×{f.calls} calls"
        if f.backed is not None and f.backed < f.calls:
            calls += f" ({f.backed} differentiated)"
    return f"{fmt_flops(f.step.flops)} ({' · '.join(parts)}) · {f.precision or '?'}{calls}"


def _short(n: int | None) -> str:
    return fmt_flops(n, "").strip() if n else "0"


def rates_cell(r: RunStats) -> str:
    """'0.75 GFLOP/s (fwd 10.6 G · bwd 3.2 G)'"""
    f = r.flops
    if f.step.flop_s is None:
        return DASH
    parts = [f"{SHORT[n]} {fmt_flops(f.part(n).flop_s, '').strip()}" for n in PHASES if f.part(n).flop_s]
    return fmt_flops(f.step.flop_s, "FLOP/s") + (f" ({' · '.join(parts)})" if parts else "")


def mfu_cell(r: RunStats, peak: str) -> str:
    """MFU against one peak ('measured' or 'datasheet'): '0.4 % (fwd 5.2 % · bwd 1.6 %) of 206
    GFLOP/s fp32', or why there is none."""
    f = r.flops
    if f.step.flop_s is None:
        return DASH
    value = f.peak_measured if peak == "measured" else f.peak_datasheet
    if value is None:
        if peak == "measured":
            return "n/a: " + (f.peak_measured_error or f"no measured {f.precision} peak")
        return _no_sheet(r)
    parts = [f"{SHORT[n]} {_mfu(r, peak, n)}" for n in PHASES if _mfu_of(r, peak, n) is not None]
    who = f" {f.peak_device}" if peak == "datasheet" else ""
    text = _mfu(r, peak, "step")
    if parts:
        text += f" ({' · '.join(parts)})"
    return text + f" of{who} {fmt_flops(value, 'FLOP/s')} {f.precision}"


def _no_sheet(r: RunStats) -> str:
    f = r.flops
    lookup = f.peak_lookup
    if lookup == "cpu":
        return "n/a on a CPU (the measured peak stands alone)"
    if lookup == "unknown-device":
        return f"unknown device {r.device_name or '?'}: the measured peak stands in"
    if lookup in ("no-precision", "no-precision-known"):
        return (f"{f.peak_device} has no {f.precision or '?'} datasheet peak: the measured "
                "peak stands in")
    return DASH


def flop_rows(summary: SessionSummary) -> list[tuple[str, object]]:
    """The table's rows, when any run counted its FLOPs."""
    runs = columns(summary)
    if not any(r.flops.counted or r.flops.error for r in runs):
        return []
    return [("FLOPs a step (eager module)", counts_cell),
            ("achieved FLOP/s (at the medians)", rates_cell),
            ("MFU vs measured peak", lambda r: mfu_cell(r, "measured")),
            ("MFU vs datasheet peak", lambda r: mfu_cell(r, "datasheet"))]


def panel_line(r: RunStats) -> str:
    """The panel's line under its phase bar: 'fwd 1.2 TFLOP/s · 31 % of measured peak · bwd ...'
    (empty without FLOP/s)."""
    f = r.flops
    out = []
    for name in ("forward", "backward"):
        rate = f.part(name).flop_s
        if not rate:
            continue
        text = f"{SHORT[name]} {fmt_flops(rate, 'FLOP/s')}"
        mfu, peak = f.part(name).mfu_measured, "measured"
        if mfu is None:
            mfu, peak = f.part(name).mfu_datasheet, "datasheet"
        if mfu is not None:
            text += (" · over 100 % of the peak?" if f"{name}:{peak}" in f.mfu_over else
                     f" · {fmt_mfu(mfu)} of {peak} peak")
        out.append(text)
    return "  ".join(out)


def line(r: RunStats) -> Line | None:
    """A row's FLOPs and FLOP/s, its MFU against each peak and its notes under it (None without
    a count)."""
    f = r.flops
    of = {"label": r.label, "run": r.run}
    if f.error:
        return Line(FIGURES, f"{r.label}: FLOPs not counted: {f.error}", of)
    if not f.counted:
        return None
    under = [Line(FIGURES, f"MFU vs measured peak: {mfu_cell(r, 'measured')}"),
             Line(FIGURES, f"MFU vs datasheet peak: {mfu_cell(r, 'datasheet')}")]
    under += [Line(NOTE, note) for note in row_notes(r)]
    return Line(FIGURES, f"{r.label}: {counts_cell(r)}; {rates_cell(r)}", of, tuple(under))


def row_notes(r: RunStats) -> list[str]:
    """What MFU stands on when it is not both peaks, and an MFU over 100 %, flagged."""
    f = r.flops
    out = [BASIS[f.mfu_basis]] if f.mfu_basis in BASIS and f.mfu_basis != "measured-cpu" else []
    if f.uncounted:
        out.append(f"the step also trains {', '.join(f.uncounted)} (another optimizer's), whose "
                   "FLOPs are not counted: no FLOP/s or MFU stands on this count")
    if f.trainings:
        out.append(f"the script trains {', '.join(f.trainings)} one after another and the count "
                   "is of the first training's step: no FLOP/s or MFU stands on it")
    if f.mfu_over:
        out.append("MFU over 100 % (" + ", ".join(x.replace(":", " vs ") for x in f.mfu_over)
                   + "): a peak that does not fit this run, not a measurement")
    return out


def section(summary: SessionSummary) -> Section:
    """The FLOPs section: a line a row that counted (empty when none did)."""
    rows = [x for x in map(line, columns(summary)) if x is not None]
    if not rows:
        return Section("flops", "FLOPs and MFU")
    intro = ("FLOPs of one extra step of the eager module (torch's FlopCounterMode; a compiled "
             "variant's too), over each phase's median time; see docs/measuring.md.")
    return Section("flops", "FLOPs and MFU", (Line(TEXT, intro), *rows))
