"""What the session ran, in words: the document's facts before the table (the script or recipe,
the command, the host and the runs' torch, the device, the Inductor cache, the allocator), and
the caution every number carries when the machine was busy."""

from __future__ import annotations

import shlex

from tuimon.analysis import SessionSummary
from tuimon.report.document import CAUTION, FACT, Line, Section
from tuimon.report.trust_text import busy_text
from tuimon.report.warm_text import start_line

PINNED = ("glibc malloc's thresholds pinned alike in every run (--pin-malloc): no run faults its "
          "buffers in again, which may read faster than your own process runs")
UNPINNED = ("as each process had it, as your own would (the default; --pin-malloc fixes its "
            "thresholds alike in every run)")


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


def section(meta: dict, summary: SessionSummary) -> Section:
    """The session's facts (none without its meta.json)."""
    if not meta:
        return Section("session")
    what = (f"script: `{shlex.join(meta['command'])}`" if meta.get("command")
            else f"recipe: `{meta.get('recipe', '?')}`")
    said = [what, f"command: `{' '.join(meta.get('argv', []))}`",
            f"host: {meta.get('host', '?')}, {runtime_line(meta, summary)}, "
            f"started {meta.get('started', '?')}",
            f"device: {device_line(summary)}",
            f"Inductor cache: {cache_line(meta, summary)}{start_line(summary)}"]
    if summary.pin_malloc is not None:
        said.append(f"allocator: {PINNED if summary.pin_malloc else UNPINNED}")
    return Section("session", lines=tuple(Line(FACT, text) for text in said))


def cache_line(meta: dict, summary) -> str:
    """meta.json's cache, less "(cold compile)" when the runs started from another session's
    artifacts (start_line says how)."""
    cache = meta.get("cache", "?")
    return cache.replace(" (cold compile)", "") if summary.cache_source else cache


def caution(summary: SessionSummary) -> Section:
    """The busy machine, said before the table: every number of it is slower than on a quiet one."""
    if not summary.busy:
        return Section("caution")
    return Section("caution", lines=(Line(CAUTION, busy_text(summary.busy), summary.busy.to_dict()),))
