"""The report's FLOPs / MFU and memory-per-phase sections, from summary.json's rows (the summary's
records, flattened) when a session measured them, else one line: "n/a — not measured in this
session". Each section is one function over the rows' keys; the keys it shows are named by prefix
below, so figures a later version records appear here without another change (wire exact keys,
or words from report/, here when they settle)."""

from __future__ import annotations

import html
import numbers

from tuimon.analysis import SessionSummary, columns
from tuimon.fmt import DASH, fmt_bytes
from tuimon.report.table import peak_memory_text

NOT_MEASURED = "n/a — not measured in this session"
# summary.json row keys (lower case) each section shows, by prefix.
MFU_KEYS = ("flops", "tflops", "mfu", "achieved_flop", "peak_flop", "flop_")


def keyed(rows: list[dict], prefixes: tuple[str, ...]) -> list[str]:
    """The keys of ``rows`` that start with one of ``prefixes`` and hold a value in some row."""
    keys = dict.fromkeys(k for row in rows for k in row if k.lower().startswith(prefixes))
    return [k for k in keys if any(row.get(k) not in (None, {}, [], "") for row in rows)]


def value_text(key: str, v) -> str:
    """A figure as short text: bytes by name, shares of one as %, dicts and lists flattened."""
    if v is None or v in ({}, [], ""):
        return DASH
    if isinstance(v, dict):
        return " · ".join(f"{k} {value_text(key + '_' + str(k), x)}" for k, x in v.items())
    if isinstance(v, (list, tuple)):
        return ", ".join(value_text(key, x) for x in v)
    if isinstance(v, bool) or not isinstance(v, numbers.Number):
        return str(v)
    if "bytes" in key or key.endswith(("_mem", "_memory", "_pool")):
        return fmt_bytes(int(v))
    return f"{v:,.3g}" if isinstance(v, float) else f"{v:,}"


def _table(rows: list[dict], keys: list[str]) -> str:
    head = "".join(f"<th>{html.escape(r.get('label', '?'))}</th>" for r in rows)
    body = "".join(f"<tr><th>{html.escape(k.replace('_', ' '))}</th>"
                   + "".join(f"<td>{html.escape(value_text(k, r.get(k)))}</td>" for r in rows) + "</tr>"
                   for k in keys)
    return (f'<div class="table"><table><thead><tr><th></th>{head}</tr></thead>'
            f'<tbody>{body}</tbody></table></div>')


def rows_of(doc: dict) -> list[dict]:
    """The rows the table compares: a variant's processes combined, else each run."""
    return doc.get("variants") or doc.get("runs") or []


def mfu_section(doc: dict) -> str:
    """FLOPs, achieved FLOP/s and MFU per phase (against the datasheet's and the measured peak)."""
    rows = rows_of(doc)
    keys = keyed(rows, MFU_KEYS)
    if not keys:
        return f'<p class="na">{NOT_MEASURED}.</p>'
    return _table(rows, keys)


# The memory and energy rows, in report/memory_text.py's words as summary.json keeps them.
MEMORY_ROWS = (("memory_words", "phases", "memory per phase (allocator peak)"),
               ("memory_words", "vs_baseline", "compile against eager, per phase"),
               ("memory_words", "graph_pool", "CUDA-graph pool"),
               ("memory_words", "batch_fit", "largest batch that would fit"),
               ("energy_words", "per_step", "energy per step"),
               ("energy_words", "per_run", "energy per run"))


def memory_section(doc: dict, summary: SessionSummary | None) -> str:
    """Memory per phase (forward, backward, optimizer; the CUDA-graph pool; headroom) and energy
    in the summary's words (n/a with its reason on a CPU), beside the whole run's peak; a session
    recorded before they were measured says so, with the peak the table gives."""
    rows = rows_of(doc)
    said = [(group, key, name) for group, key, name in MEMORY_ROWS
            if any((r.get(group) or {}).get(key) not in (None, DASH) for r in rows)]
    peaks = {r.label: peak_memory_text(r) for r in columns(summary)} if summary else {}
    if said:
        head = "".join(f"<th>{html.escape(r.get('label', '?'))}</th>" for r in rows)
        body = [(name, [(r.get(group) or {}).get(key) or DASH for r in rows])
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
