"""summary.md, summary.json and steps.csv, from the session directory alone (read and summarized
by ``tuimon.analysis.load_session``): rendering each format, and writing each file whole or not
at all."""

from __future__ import annotations

import contextlib
import csv
import datetime
import io
import json
import os
import shlex
from pathlib import Path

from tuimon import events
from tuimon.analysis import (
    STEP_PARTS,
    SessionSummary,
    columns,
    load_session,
    step_kind,
    step_split,
    tried,
)
from tuimon.report import files_text, flops_text, summary_json, try_text, verdict_text, why_text
from tuimon.report.rank_text import rank_notes
from tuimon.report.table import (
    answer_notes,
    compile_notes,
    failure_notes,
    profile_note,
    table,
)
from tuimon.report.trust_text import busy_text, round_text, row_notes, unreliable_text
from tuimon.report.warm_text import start_line, warm_notes
from tuimon.sessiondir import store


def to_markdown(meta: dict, summary: SessionSummary) -> str:
    header, rows = table(summary)
    out = [f"# tuimon session {meta.get('name', '')}".rstrip(), ""]
    if summary.verdict is not None:  # the answer first (stats/verdict.py)
        out += [verdict_text.line(summary.verdict), ""]
    out += try_text.markdown(tried.outcomes(summary))  # a session that raced fixes: what each did
    if meta:
        what = (f"- script: `{shlex.join(meta['command'])}`" if meta.get("command")
                else f"- recipe: `{meta.get('recipe', '?')}`")
        out += [what,
                f"- command: `{' '.join(meta.get('argv', []))}`",
                f"- host: {meta.get('host', '?')}, {runtime_line(meta, summary)}, "
                f"started {meta.get('started', '?')}",
                f"- device: {device_line(summary)}",
                f"- Inductor cache: {meta.get('cache', '?')}{start_line(summary)}"]
        if summary.pin_malloc is not None:
            out.append("- allocator: " + ("glibc malloc's thresholds pinned alike in every run "
                                          "(--pin-malloc): no run faults its buffers in again, "
                                          "which may read faster than your own process runs"
                                          if summary.pin_malloc else
                                          "as each process had it, as your own would (the default; "
                                          "--pin-malloc fixes its thresholds alike in every run)"))
        out.append("")
    if summary.busy:
        out += [f"**Note: {busy_text(summary.busy)}.**", ""]
    out.append("| " + " | ".join(header) + " |")
    out.append("|" + "---|" * len(header))
    out += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in rows]
    notes = [f"- {n}" for n in answer_notes(summary) + compile_notes(summary)]
    notes += [f"- {r.label}: {n}" for r in columns(summary) for n in row_notes(r, summary.quiet_only)]
    notes += [f"- {n}" if not n.startswith("  ") else n for n in warm_notes(summary)]
    notes += [f"- {profile_note(r, p)}" for r in summary.runs for p in r.profiles]
    if summary.gpu_available is False:
        notes.append(f"- GPU metrics: n/a ({summary.gpu_reason})")
    if summary.unsupported:
        notes.append(f"- GPU metrics this device does not report: {', '.join(summary.unsupported)}")
    notes += [f"- warning: {w}" for w in summary.warnings]
    for r in summary.runs:
        notes += failure_notes(r) + rank_notes(r)
    left = dict.fromkeys(round_text(p["why"]) for v in summary.variants for p in v.left_out)
    notes += [f"- {why}: left out of every variant's step time (the other rounds were quiet)"
              for why in left]
    for r in columns(summary):
        notes += [f"- {r.label}: graph break at {b['where']} (×{b['count']}): {b['reason']}"
                  for b in r.compile.graph_breaks[1:]]
        notes += [f"- {r.label}: recompile: {reason}" for reason in r.compile.recompile_reasons]
        if r.doubts:
            notes.append(f"- {r.label}: unreliable: {unreliable_text(r)}")
    if summary.unreadable_lines:
        notes.append(f"- {summary.unreadable_lines} unreadable line(s) in events.jsonl were skipped")
    if notes:
        out += ["", "Notes:", *notes]
    out += ["", "Median over steady-state steps (warm-up, found in the data by MSER-5 unless fixed, and "
            "any step that compiled are kept apart); speedup against eager of the same precision "
            "and axis values, "
            "with a 95 % interval from order statistics widened for correlated neighbouring steps."]
    if summary.variants:
        out[-1] += (" Each variant ran in several processes (--repeats), in rounds: round 1's ran the "
                    "whole length asked for (what the script does late in its run is reached), "
                    "rounds 2 and on a share of it each (their steps are in \"median step per "
                    "process\"); its median is the geometric mean of theirs, and its interval a "
                    "Student's t interval over them, so it covers the spread between processes too.")
    else:
        out[-1] += (" The interval covers step-to-step noise within one process, not the spread "
                    "between processes: --repeats 3 or more measures that.")
    if any(r.timing.profiled_steps for r in summary.runs):
        out[-1] += " Steps a profiler capture recorded are kept apart too (the profiler slows them)."
    if flops := flops_text.section(summary):
        out += ["", *flops]
    if why := why_text.markdown(summary):
        out += ["", *why]
    if files := files_text.markdown(summary.files):
        out += ["", *files]
    return "\n".join(out).rstrip("\n") + "\n"


def runtime_line(meta: dict, summary: SessionSummary) -> str:
    """The torch, Python and CUDA build the runs used, read in their own interpreters (a
    script's python may not be tuimon's); tuimon's own torch where no run said, or where it
    differs."""
    used: dict[str, list[str]] = {}
    for r in summary.runs:
        if r.torch:
            text = f"torch {r.torch} (Python {r.python or '?'}, CUDA {r.cuda or 'none: a CPU build'})"
            used.setdefault(text, []).append(r.run)
    if not used:
        return f"torch {meta.get('torch', '?')}"
    out = "; ".join(text if len(used) == 1 else f"{text} in {', '.join(runs)}"
                    for text, runs in used.items())
    ours = meta.get("torch")
    if ours and any(r.torch.split("+")[0] != ours.split("+")[0] for r in summary.runs if r.torch):
        out += f"; tuimon itself: torch {ours}"
    return out


def device_line(summary: SessionSummary) -> str:
    names = {f"{r.device} ({r.device_name})" for r in summary.runs if r.device}
    return ", ".join(sorted(names)) or "?"


def to_json(meta: dict, summary: SessionSummary) -> str:
    return json.dumps(summary_json.document(meta, summary), indent=2, default=str) + "\n"


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
        row = {**e, "mode": "", "precision": "", **variant.get(e.get("run"), {}), "kind": step_kind(e),
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
    texts = {"md": to_markdown(meta, summary), "json": to_json(meta, summary),
             "csv": to_csv(evs, summary)}
    written = {} if written is None else written
    for fmt, text in texts.items():
        target = path / formats[fmt]
        tmp = target.with_name(target.name + ".tmp")
        try:
            tmp.write_text(text, encoding="utf-8")
            os.replace(tmp, target)
        except OSError:
            with contextlib.suppress(OSError):
                tmp.unlink()
            raise
        written[fmt] = target
    return written
