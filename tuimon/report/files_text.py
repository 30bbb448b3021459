"""A script session's files in words (analysis/files.py computed them): the Files section of
summary.md and the headless lines. Each run's outputs, the writes not kept apart, and what
changed in the user's directory."""

from __future__ import annotations

from tuimon.fmt import fmt_bytes

NAMED = 8  # outputs named per run in summary.md (summary.json has up to 100)
NAMED_LINE = 4  # ... and on a headless line


def _outputs(o: dict, named: int) -> str:
    files = ", ".join(f"`{f['path']}` ({fmt_bytes(f['bytes'])})" for f in o["files"][:named])
    more = o["count"] - min(named, len(o["files"]))
    if more > 0:
        files += f", and {more} more"
    if not o["count"]:
        return f"{o['label']}: wrote no file"
    return f"{o['label']}: {o['count']} file(s), {fmt_bytes(o['bytes'])}, in `{o['dir']}`: {files}"


def _shared(w: dict) -> str:
    before = " (it existed before the session)" if w["existed"] else ""
    return f"`{w['path']}` written by {' and '.join(w['runs'])}{before}"


def _changes(files: dict, named: int) -> str:
    listed = ", ".join(f"`{c['path']}` ({c['change']})" for c in files["changes"][:named])
    more = files["changed"] - min(named, len(files["changes"]))
    return listed + (f", and {more} more" if more > 0 else "")


def markdown(files: dict | None) -> list[str]:
    if not files:
        return []
    dirs = " and ".join(f"`{d}`" for d in files["dirs"]) or "the working directory"
    out = ["## Files", "",
           f"Each run worked in its own copy-on-write view of {dirs}: what it wrote is kept under "
           "the session's `files/RUN/`.", ""]
    out += [f"- {_outputs(o, NAMED)}" for o in files["outputs"]]
    out += [f"- **not kept apart**: {_shared(w)}" for w in files["outside"] if w["shared"]]
    out += [f"- written outside the working directory, over a file that was there: `{w['path']}` "
            f"({w['runs'][0]})" for w in files["outside"] if not w["shared"] and w["existed"]]
    alone = [w for w in files["outside"] if not w["shared"] and not w["existed"]]
    if alone:
        out.append("- also written outside the working directory: " + ", ".join(
            f"`{w['path']}` ({w['runs'][0]})" for w in alone[:NAMED])
            + (f", and {len(alone) - NAMED} more" if len(alone) > NAMED else ""))
    if files["changed"]:
        out.append(f"- **changed in your directory during the session** (by a process tuimon's "
                   f"hooks do not see, or by someone else): {_changes(files, NAMED)}")
    elif files["watched"]:
        out.append("- your directory: unchanged")
    return out


def lines(files: dict | None) -> list[tuple[str, bool]]:
    """Headless: (line, whether it warns)."""
    if not files:
        return []
    out = [(f"files: {_outputs(o, NAMED_LINE)}".replace("`", ""), False) for o in files["outputs"]]
    out += [(f"not kept apart: {_shared(w)}".replace("`", ""), True)
            for w in files["outside"] if w["shared"]]
    out += [(f"written outside the working directory, over a file that was there: {w['path']} "
             f"({w['runs'][0]})", True) for w in files["outside"] if not w["shared"] and w["existed"]]
    if files["changed"]:
        out.append((f"changed in your directory during the session: {_changes(files, NAMED_LINE)}"
                    .replace("`", ""), True))
    return out
