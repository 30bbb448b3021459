"""The summary's document (report/document.py), built once a summary, section by section in
the order summary.md reads: each section is its own module's (the verdict's, the notes', the
Why's, ...). A view that shows a few sections builds those only (``only``): the TUI's strip
redraws its verdict every second, the why pane its diagnosis once a summary."""

from __future__ import annotations

from tuimon.analysis import SessionSummary
from tuimon.report import files_text, flops_text, notes_text, session_text, try_text, verdict_text, why_text
from tuimon.report.document import Document, Section, Table
from tuimon.report.table import table

BUILD = {
    "verdict": lambda meta, s: verdict_text.section(s),
    "tried": lambda meta, s: try_text.section(s),
    "session": session_text.section,
    "caution": lambda meta, s: session_text.caution(s),
    "table": lambda meta, s: Section("table", table=Table(*table(s))),
    "notes": lambda meta, s: notes_text.section(s),
    "method": lambda meta, s: notes_text.method(s),
    "flops": lambda meta, s: flops_text.section(s),
    "why": lambda meta, s: why_text.section(s),
    "files": lambda meta, s: files_text.section(s.files),
}


def document(meta: dict, summary: SessionSummary, only: tuple[str, ...] = tuple(BUILD)) -> Document:
    return Document(f"tuimon session {meta.get('name', '')}".rstrip(),
                    tuple(BUILD[key](meta, summary) for key in only))
