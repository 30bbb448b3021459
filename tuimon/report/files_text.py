"""A script session's files in words (analysis/files.py computed them): the document's Files
section, which summary.md, the page and the terminal render. Each run's outputs, the writes not
kept apart, and what changed in the user's directory."""

from __future__ import annotations

from tuimon.fmt import fmt_bytes
from tuimon.report.document import DETAIL, NOTE, TEXT, WARNING, Line, Section

NAMED = 8  # outputs named per run (summary.json has up to 100)


def _outputs(o: dict) -> str:
    files = ", ".join(f"`{f['path']}` ({fmt_bytes(f['bytes'])})" for f in o["files"][:NAMED])
    more = o["count"] - min(NAMED, len(o["files"]))
    if more > 0:
        files += f", and {more} more"
    if not o["count"]:
        return f"{o['label']}: wrote no file"
    return f"{o['label']}: {o['count']} file(s), {fmt_bytes(o['bytes'])}, in `{o['dir']}`: {files}"


def _shared(w: dict) -> str:
    before = " (it existed before the session)" if w["existed"] else ""
    return f"`{w['path']}` written by {' and '.join(w['runs'])}{before}"


def _changes(files: dict) -> str:
    listed = ", ".join(f"`{c['path']}` ({c['change']})" for c in files["changes"][:NAMED])
    more = files["changed"] - min(NAMED, len(files["changes"]))
    return listed + (f", and {more} more" if more > 0 else "")


def section(files: dict | None) -> Section:
    """Each run's outputs, the writes not kept apart (warnings), and what changed in the user's
    directory (empty for a recipe's session)."""
    if not files:
        return Section("files", "Files")
    dirs = " and ".join(f"`{d}`" for d in files["dirs"]) or "the working directory"
    lines = [Line(TEXT, f"Each run worked in its own copy-on-write view of {dirs}: what it wrote is "
                        "kept under the session's `files/RUN/`.")]
    lines += [Line(NOTE, _outputs(o)) for o in files["outputs"]]
    lines += [Line(WARNING, f"**not kept apart**: {_shared(w)}") for w in files["outside"] if w["shared"]]
    lines += [Line(WARNING, f"written outside the working directory, over a file that was there: "
                            f"`{w['path']}` ({w['runs'][0]})")
              for w in files["outside"] if not w["shared"] and w["existed"]]
    alone = [w for w in files["outside"] if not w["shared"] and not w["existed"]]
    if alone:
        lines.append(Line(DETAIL, "also written outside the working directory: " + ", ".join(
            f"`{w['path']}` ({w['runs'][0]})" for w in alone[:NAMED])
            + (f", and {len(alone) - NAMED} more" if len(alone) > NAMED else "")))
    if files["changed"]:
        lines.append(Line(WARNING, "**changed in your directory during the session** (by a process "
                                   f"tuimon's hooks do not see, or by someone else): {_changes(files)}"))
    elif files["watched"]:
        lines.append(Line(DETAIL, "your directory: unchanged"))
    return Section("files", "Files", tuple(lines))
