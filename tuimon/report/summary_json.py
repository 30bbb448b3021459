"""summary.json's document (its shape: report/schema.py and summary.schema.json): the summary's
figures as analysis computed them, a row nested as its records are, the decisions as codes where
they are made (a row's ``doubts``, ``compile.val_guards``, ``memory.batch_fit_why``, the
verdict's ``reason_codes``, ``busy_reason``), and beside them the words every other view shows
(a row's ``words``, the verdict's line and reasons, the Why findings, what each fix did)."""

from __future__ import annotations

from dataclasses import asdict

from tuimon.analysis import RunStats, SessionSummary, tried
from tuimon.report import flops_text, memory_text, try_text, verdict_text, why_text
from tuimon.report.compile_text import fallback_text, guard_word, nothing_text
from tuimon.report.miss_text import miss_text
from tuimon.report.rank_text import divergence_line
from tuimon.report.schema import SCHEMA_VERSION
from tuimon.report.trust_text import busy_text, round_text, row_notes, unreliable_text


def document(meta: dict, summary: SessionSummary) -> dict:
    doc = summary.to_dict()
    doc["verdict"] = verdict_text.to_dict(summary.verdict) if summary.verdict is not None else None
    doc["busy"] = busy_text(summary.busy) if summary.busy else None
    doc["busy_reason"] = summary.busy.to_dict() if summary.busy else None
    for key, rows in (("runs", summary.runs), ("variants", summary.variants)):
        for d, r in zip(doc[key], rows, strict=True):
            d["words"] = row_words(r, summary.quiet_only)
    # Each fix's figures, its reasons as the summary's other points are kept, and its line
    raced = [asdict(o) | {"unsure": [p.to_dict() for p in o.unsure], "line": try_text.outcome_line(o)}
             for o in tried.outcomes(summary)]
    return {"schema_version": SCHEMA_VERSION, "meta": meta, **doc, "why": why_text.as_json(summary),
            **({"tried": raced} if raced else {})}


def row_words(r: RunStats, quiet_only: bool) -> dict:
    """A row's decisions in words, each beside the record that holds its codes."""
    return {
        "notes": row_notes(r, quiet_only),
        "unreliable": unreliable_text(r),
        "left_out": [round_text(p["why"]) for p in r.left_out],
        "nothing_compiled": nothing_text(r.compile.nothing_compiled) if r.compile.nothing_compiled else None,
        "fell_back": [fallback_text(f) for f in r.compile.fell_back],
        "val_guards": [guard_word(g) for g in r.compile.val_guards],
        "miss_reasons": [miss_text(p) for p in r.warm.miss_reasons],
        "compile_divergence": [divergence_line(p) for p in r.job.compile_divergence],
        **memory_text.row_words(r),
        "flops": flops_text.lines(r),
    }
