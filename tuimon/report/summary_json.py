"""summary.json's document (its shape: report/schema.py and summary.schema.json): the summary's
figures as analysis computed them, a row nested as its records are, the decisions as codes where
they are made (a row's ``doubts``, ``compile.val_guards``, ``memory.batch_fit_why``, the
verdict's ``reason_codes``, ``busy_reason``), and beside them their words, taken from the
summary's document (report/sections.py) as every other view takes them: the verdict's line, the
Why findings, each fix's line, a row's ``words``."""

from __future__ import annotations

from tuimon.analysis import RunStats, SessionSummary
from tuimon.report import memory_text, sections, verdict_text, why_text
from tuimon.report.compile_text import fallback_text, guard_word, nothing_text
from tuimon.report.document import TRIED, Document, figure_lines
from tuimon.report.miss_text import miss_text
from tuimon.report.rank_text import divergence_line
from tuimon.report.schema import SCHEMA_VERSION
from tuimon.report.trust_text import round_text, row_notes, unreliable_text


def document(meta: dict, summary: SessionSummary, doc: Document | None = None) -> dict:
    doc = doc or sections.document(meta, summary)
    out = summary.to_dict()
    said = doc["verdict"].lines
    out["verdict"] = verdict_text.to_dict(summary.verdict, said[0].text) if said else None
    out["busy"] = next((x.text for x in doc["caution"].lines), None)
    if out["known"] is not None:  # --until-known: why it stopped, as summary.md says it
        out["known"]["line"] = next((x.text for x in said if x.figures.get("kind") == "known"), None)
    out["busy_reason"] = summary.busy.to_dict() if summary.busy else None
    flops = {x.figures["run"]: figure_lines(x) for x in doc["flops"].lines if "run" in x.figures}
    for key, rows in (("runs", summary.runs), ("variants", summary.variants)):
        for d, r in zip(out[key], rows, strict=True):
            d["words"] = row_words(r, summary.quiet_only) | {"flops": flops.get(r.run, [])}
    raced = [x.figures | {"line": x.text} for x in doc["tried"].of(TRIED)]
    return {"schema_version": SCHEMA_VERSION, "meta": meta, **out, "why": why_text.as_json(doc["why"]),
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
    }
