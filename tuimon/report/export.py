"""summary.md, summary.json and steps.csv, from the session directory alone (read and summarized
by ``tuimon.analysis.load_session``): rendering each format, and writing each file whole or not
at all."""

from __future__ import annotations

import csv
import datetime
import io
import json
from pathlib import Path

from tuimon import events
from tuimon.analysis import STEP_PARTS, SessionSummary, load_session, step_kind, step_split
from tuimon.report import render_md, sections, summary_json
from tuimon.report.document import Document
from tuimon.report.session_text import device_line
from tuimon.report.table import table  # noqa: F401 - the summary table, as the exporters lay it out
from tuimon.sessiondir import store


def to_markdown(meta: dict, summary: SessionSummary) -> str:
    return render_md.markdown(sections.document(meta, summary))


def to_json(meta: dict, summary: SessionSummary, doc: Document | None = None) -> str:
    return json.dumps(summary_json.document(meta, summary, doc), indent=2, default=str) + "\n"


# ``phase`` is the runner's (warmup / steady); ``kind`` what the statistics make of the step
# (warmup, steady, compile, gap: a validation pass inside it, profiled: a capture recorded it),
# and ``gap`` 1 for a validation pass's step (kept out of the steady state). A torchrun job's
# steps are its ranks' (``rank``; ``pre_ms``: to their last backward()); single-process runs
# leave both empty. Then the step's split: a column a phase, in ms (empty: not seen, or a step
# without a split; other: the rest of the step).
PART_COLUMNS = [f"{name}_phase_ms" for name in STEP_PARTS]
STEP_COLUMNS = ["run", "mode", "precision", "i", "t", "ms", "data_ms", "n", "loss", "phase", "kind",
                "gap", "compile_ms", "rank", "pre_ms", *PART_COLUMNS]


def to_csv(session_events: list[dict], summary: SessionSummary) -> str:
    """One row per step; with --set axes, one column per axis (after precision) holding the
    run's value."""
    variant = {r.run: {"mode": r.mode, "precision": r.precision, **r.axes} for r in summary.runs}
    columns = STEP_COLUMNS[:3] + [k for k in summary.axes if k not in STEP_COLUMNS] + STEP_COLUMNS[3:]
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(columns)
    for e in session_events:
        if e["type"] != events.STEP:
            continue
        row = {**e, "mode": "", "precision": "", **variant.get(e.get("run", ""), {}), "kind": step_kind(e),
               "gap": 1 if e.get("gap") else None}
        for name, ms in step_split(e).items():
            row[f"{name}_phase_ms"] = None if ms is None else round(ms, 4)
        writer.writerow(["" if row.get(c) is None else row.get(c) for c in columns])
    return buf.getvalue()


FORMATS = {"md": "summary.md", "json": "summary.json", "csv": "steps.csv"}
# Several nodes' sessions of one job, read together: written into the first one named, beside
# that node's own files.
JOB_FORMATS = {"md": "job-summary.md", "json": "job-summary.json", "csv": "job-steps.csv"}


def finish(path: str | Path, status: str, *, stored: tuple[list[dict], int] | None = None,
           unwritten: list[dict] | None = None, error: str | None = None
           ) -> tuple[dict, SessionSummary, dict[str, Path]]:
    """End of a session: the summary files from the store alone, then the final meta.json status
    (last, so that a status other than "running" means the summary is there).

    ``stored``: the events as the store's open file holds them (``read_back``). After a store
    failure (``error``): ``unwritten`` (the events that never reached the file) count in the
    summary too, and what cannot be written now (a full disk) is skipped, not raised: the summary
    is still returned, and ``written`` holds only the files that made it. Without a store failure,
    a summary that cannot be written raises StoreWriteError (one line)."""
    path = Path(path)
    meta, evs, summary = load_session(path, unwritten, stored)
    meta.update(status=status, ended=datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
                devices=device_line(summary), gpu=summary.gpu_reason or summary.gpu_available)
    if error:
        meta["error"] = error
    written: dict[str, Path] = {}
    try:
        write(path, meta, evs, summary, written)
        store.write_json_atomic(path / store.META, meta)
    except OSError as exc:
        if not error:
            raise store.StoreWriteError(f"cannot write the summary into {path}: "
                                        f"{exc.strerror or exc}") from None
    return meta, summary, written


def write_all(path: str | Path) -> dict[str, Path]:
    """(Re)write every export into the session directory; returns format -> file."""
    return write(Path(path), *load_session(path))


def write(path: Path, meta: dict, evs: list[dict], summary: SessionSummary,
          written: dict[str, Path] | None = None, formats: dict[str, str] = FORMATS) -> dict[str, Path]:
    """Each file whole or not at all (a full disk leaves the old one); ``written`` fills as
    they land, so a caller that catches the OSError knows which did."""
    doc = sections.document(meta, summary)  # worded once, for summary.md and summary.json
    texts = {"md": render_md.markdown(doc), "json": to_json(meta, summary, doc), "csv": to_csv(evs, summary)}
    written = {} if written is None else written
    for fmt, text in texts.items():
        store.write_atomic(path / formats[fmt], text)
        written[fmt] = path / formats[fmt]
    return written
