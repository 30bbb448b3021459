"""The report's FLOPs / MFU and memory-per-phase sections, in the words summary.json keeps for
them (report/flops_text.py, report/memory_text.py: nothing is worded twice), else one line:
"n/a — not measured in this session" (a session recorded before they were measured)."""

from __future__ import annotations

import html

from tuimon.analysis import SessionSummary, columns
from tuimon.fmt import DASH
from tuimon.report.table import peak_memory_text

NOT_MEASURED = "n/a — not measured in this session"
def rows_of(doc: dict) -> list[dict]:
    """The rows the table compares: a variant's processes combined, else each run."""
    return doc.get("variants") or doc.get("runs") or []


def mfu_section(doc: dict) -> str:
    """FLOPs, achieved FLOP/s and MFU per phase (against the measured and the datasheet peak), in
    the summary's own words (report/flops_text.py, summary.json's ``flops_words``)."""
    said = [line for r in rows_of(doc) for line in r["words"]["flops"]]
    if not said:
        return f'<p class="na">{NOT_MEASURED}.</p>'
    return "<ul>" + "".join(f"<li>{html.escape(line)}</li>" for line in said) + "</ul>"


# The memory and energy rows, in report/memory_text.py's words as summary.json keeps them.
MEMORY_ROWS = (("memory", "phases", "memory per phase (allocator peak)"),
               ("memory", "vs_baseline", "compile against eager, per phase"),
               ("memory", "graph_pool", "CUDA-graph pool"),
               ("memory", "batch_fit", "largest batch that would fit"),
               ("energy", "per_step", "energy per step"),
               ("energy", "per_run", "energy per run"))


def memory_section(doc: dict, summary: SessionSummary | None) -> str:
    """Memory per phase (forward, backward, optimizer; the CUDA-graph pool; headroom) and energy
    in the summary's words (n/a with its reason on a CPU), beside the whole run's peak; a session
    recorded before they were measured says so, with the peak the table gives."""
    rows = rows_of(doc)
    said = [(group, key, name) for group, key, name in MEMORY_ROWS
            if any((r["words"][group] or {}).get(key) not in (None, DASH) for r in rows)]
    peaks = {r.label: peak_memory_text(r) for r in columns(summary)} if summary else {}
    if said:
        head = "".join(f"<th>{html.escape(r.get('label', '?'))}</th>" for r in rows)
        body = [(name, [(r["words"][group] or {}).get(key) or DASH for r in rows])
                for group, key, name in said]
        body.insert(0, ("peak memory (the whole run)", [peaks.get(r.get("label"), DASH) for r in rows]))
        cells = "".join(f"<tr><th>{html.escape(name)}</th>"
                        + "".join(f"<td>{html.escape(str(v))}</td>" for v in values) + "</tr>"
                        for name, values in body)
        return (f'<div class="table"><table><thead><tr><th></th>{head}</tr></thead>'
                f'<tbody>{cells}</tbody></table></div>')
    peak = [f"{label} {text}" for label, text in peaks.items() if text != DASH]
    tail = f" The whole run's peak, as the table gives it: {'; '.join(peak)}." if peak else ""
    return f'<p class="na">{NOT_MEASURED} (memory per phase, energy).{html.escape(tail)}</p>'
