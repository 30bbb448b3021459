"""The summary's document (report/document.py), built once a summary, section by section in
the order summary.md reads: each section is its own module's (the verdict's, the notes', the
Why's, ...). A view that shows a few sections builds those only (``only``): the TUI's strip
redraws its verdict every second, the why pane its diagnosis once a summary."""

from __future__ import annotations

from tuimon.analysis import SessionSummary, columns
from tuimon.fmt import DASH
from tuimon.report import (
    anatomy_text,
    files_text,
    flops_text,
    notes_text,
    session_text,
    try_text,
    verdict_text,
    why_text,
)
from tuimon.report.document import TEXT, Document, Line, Section, Table
from tuimon.report.memory_text import ENERGY, MEMORY
from tuimon.report.table import peak_memory_text, table

NOT_MEASURED = "n/a — not measured in this session"


def memory(summary: SessionSummary) -> Section:
    """report.html's own: memory per phase and energy (the rows any run said something in)
    beside the whole run's peak; a session recorded before they were measured says so, with the
    peak the table gives."""
    rows = columns(summary)
    said = [[name, *(cell(r) for r in rows)] for _, name, cell in (*MEMORY, *ENERGY)]
    said = [row for row in said if any(c != DASH for c in row[1:])]
    peaks = [peak_memory_text(r) for r in rows]
    if said:
        return Section("memory", table=Table(["", *(r.label for r in rows)],
                                             [["peak memory (the whole run)", *peaks], *said]))
    peak = "; ".join(f"{r.label} {text}" for r, text in zip(rows, peaks, strict=True) if text != DASH)
    tail = f" The whole run's peak, as the table gives it: {peak}." if peak else ""
    return Section("memory", lines=(Line(TEXT, f"{NOT_MEASURED} (memory per phase, energy).{tail}"),))


BUILD = {
    "verdict": lambda meta, s: verdict_text.section(s),
    "tried": lambda meta, s: try_text.section(s),
    "session": session_text.section,
    "loop": lambda meta, s: anatomy_text.section(s),
    "caution": lambda meta, s: session_text.caution(s),
    "table": lambda meta, s: Section("table", table=Table(*table(s))),
    "notes": lambda meta, s: notes_text.section(s),
    "method": lambda meta, s: notes_text.method(s),
    "flops": lambda meta, s: flops_text.section(s),
    "why": lambda meta, s: why_text.section(s),
    "files": lambda meta, s: files_text.section(s.files),
    "memory": lambda meta, s: memory(s),
}
SUMMARY = tuple(key for key in BUILD if key != "memory")  # summary.md's (the memory table: the page's)


def document(meta: dict, summary: SessionSummary, only: tuple[str, ...] = SUMMARY) -> Document:
    return Document(f"tuimon session {meta.get('name', '')}".rstrip(),
                    tuple(BUILD[key](meta, summary) for key in only))
