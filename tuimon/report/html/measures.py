"""The report's FLOPs / MFU and memory-per-phase sections, in the summary's own words (the
document's FLOPs section, report/flops_text.py; report/memory_text.py's cells: nothing is worded
twice), else one line: "n/a — not measured in this session" (a session recorded before they were
measured)."""

from __future__ import annotations

import html

from tuimon.analysis import SessionSummary, columns
from tuimon.fmt import DASH
from tuimon.report import memory_text
from tuimon.report.document import FIGURES, Section
from tuimon.report.html.lines import blocks
from tuimon.report.table import peak_memory_text

NOT_MEASURED = "n/a — not measured in this session"


def mfu_section(flops: Section) -> str:
    """FLOPs, achieved FLOP/s and MFU per phase (against the measured and the datasheet peak), a
    row's figures with its details under them."""
    said = [x for x in flops.lines if x.kind == FIGURES]
    return "\n".join(blocks(said)) if said else f'<p class="na">{NOT_MEASURED}.</p>'


def memory_section(summary: SessionSummary) -> str:
    """Memory per phase (forward, backward, optimizer; the CUDA-graph pool; headroom) and energy
    in the summary's words (n/a with its reason on a CPU), beside the whole run's peak; a session
    recorded before they were measured says so, with the peak the table gives."""
    rows = columns(summary)
    said = [(name, [cell(r) for r in rows]) for _, name, cell in memory_text.MEMORY + memory_text.ENERGY]
    said = [(name, cells) for name, cells in said if any(c != DASH for c in cells)]
    peaks = [peak_memory_text(r) for r in rows]
    if said:
        head = "".join(f"<th>{html.escape(r.label)}</th>" for r in rows)
        body = [("peak memory (the whole run)", peaks), *said]
        cells = "".join(f"<tr><th>{html.escape(name)}</th>"
                        + "".join(f"<td>{html.escape(str(v))}</td>" for v in values) + "</tr>"
                        for name, values in body)
        return (f'<div class="table"><table><thead><tr><th></th>{head}</tr></thead>'
                f'<tbody>{cells}</tbody></table></div>')
    peak = [f"{r.label} {text}" for r, text in zip(rows, peaks, strict=True) if text != DASH]
    tail = f" The whole run's peak, as the table gives it: {'; '.join(peak)}." if peak else ""
    return f'<p class="na">{NOT_MEASURED} (memory per phase, energy).{html.escape(tail)}</p>'
