"""A comparison as Markdown, JSON or rich tables on a terminal, and the regression guard's
judgements in words. Text only: the changes and judgements come from ``analysis.compare``, the
figures' cells from ``compare_figures``."""

from __future__ import annotations

import json

from rich.console import Console
from rich.table import Table
from rich.text import Text

from tuimon.analysis import Change, Comparison, Point, VariantDiff, guard
from tuimon.report.compare_figures import figures
from tuimon.report.document import NOTE, WARNING, Line
from tuimon.report.trust_text import doubt_text
from tuimon.report.untold_text import untold_text

# Sessions whose least told change is too wide to say (analysis/stats/noise.py untold_change).
NO_LEAST = ("these sessions can tell no change of the size compile commonly makes (their processes ran too "
            "far apart)")


def change_text(c: Change | None, kind: str = "time") -> str:
    """'+12.3 % (95 % CI +8.1 to +16.6 %), slower' / '-0.4 % (...), within noise' / '+5.0 %'."""
    if c is None:
        return ""
    words = {"time": ("slower", "faster"), "size": ("more", "less")}.get(kind, ("up", "down"))
    if c.untold is not None:  # no figure: its interval holds every answer
        return untold_text(c.untold, *words)
    text = f"{c.pct:+.1f} %"
    if c.lo is None:
        return text
    text += f" (95 % CI {(c.lo - 1) * 100:+.1f} to {(c.hi - 1) * 100:+.1f} %)"
    if not c.significant:
        return text + ", within noise"
    return text + f", {words[0] if c.ratio > 1 else words[1]}"


def note_text(n: Point) -> str:
    """A session's note, or a variant left out of the comparison (analysis/compare/sessions.py)."""
    f = n.figures
    if n.code == "restarted":
        return (f"{f['label']}: {f['runs']} runs in {f['letter']}; compared {f['run']}, its last run "
                "that measured steps")
    if n.code == "same_recording":
        return (f"{f['letter']} is the same recording as A: nothing changed between them, and the "
                "guard judges nothing")
    if n.code == "only_in":
        return f"{f['label']}: only in {', '.join(f['letters'])}"
    raise KeyError(n.code)


def plan_text(p: Point) -> str:
    """'these sessions tell a change of 31 % or more; 7 processes a side would tell 10 % (run both
    with --repeats 7)'."""
    f = p.figures
    out = (NO_LEAST if f.get("untold") else
           f"these sessions tell a change of {f['least']:.0f} % or more" if f["least"] is not None else "")
    pct = f["pct"]
    if p.code == "processes":
        more = f"{f['k']} processes a side would tell {pct:g} % (run both with --repeats {f['k']})"
    elif p.code == "zero":
        more = "no number of processes tells 0 %"
    elif p.code == "session":
        more = (f"between two sessions no number of processes tells {pct:g} % (each session's own "
                f"level, ±{f['session_pct']:.0f} % assumed, --session-spread): race "
                "both in one session (an axis: --set impl=old,new), where rounds are paired")
    else:
        more = f"even 20 processes a side would not tell {pct:g} % on this machine: look for a quieter one"
    return f"{out}; {more}" if out else more


def judgement_text(j: Point) -> str:
    """One of the guard's judgements (analysis/compare/changes.py guard)."""
    f = j.figures
    who = f"{f['label']} in {f['letter']} vs A" + (" (unreliable: other processes' load differed)"
                                                   if f["shaky"] else "")
    if j.code == "no_interval":
        return f"{who}: no interval for the median step (too few steady steps)"
    if j.code == "slower":
        return f"{who}: median step {change_text(f['change'])}, more than --fail-if-slower {f['pct']:g} %"
    if j.code == "cannot_tell":
        return (f"{who}: cannot tell whether the median step got more than {f['pct']:g} % slower: "
                f"{change_text(f['change'])}; " + plan_text(f["plan"]))
    return (f"{who}: {f['start']} compile time {change_text(f['change'])}, more than "
            f"--fail-if-compile-slower {f['pct']:g} %")


def guard_lines(c: Comparison, slower_pct: float | None, compile_pct: float | None
                ) -> tuple[list[str], list[str], list[str]]:
    """The regression guard's (failures, what cannot be told, what could not be judged), in words."""
    return tuple([judgement_text(j) for j in found] for found in guard(c, slower_pct, compile_pct))


def _notes(c: Comparison, unjudged) -> list[str]:
    return [*map(note_text, c.left_out), *map(note_text, c.notes), *[f"not judged: {u}" for u in unjudged]]


def cells(v: VariantDiff, sep: str = ", ") -> list[tuple[str, list[str]]]:
    """(metric, one cell per session): the value, and after the baseline its change."""
    out = []
    for m in figures(v):
        row = []
        for value, change in zip(m.values, m.changes, strict=True):
            said = change_text(change, m.kind)
            row.append(f"{value}{sep}{said}" if said and value not in ("–", "not run") else value)
        out.append((m.name, row))
    return out


def legend(c: Comparison) -> list[str]:
    out = []
    for s in c.sessions:
        meta = s.meta
        what = "baseline" if s.letter == "A" else "compared with A"
        out.append(f"{s.letter}: {s.path} ({what}; started {meta.get('started', '?')}, "
                   f"torch {meta.get('torch', '?')}, {meta.get('status', '?')})")
    return out


def to_markdown(c: Comparison, failures: list[str] = (), unjudged: list[str] = (),
                cannot: list[str] = ()) -> str:
    out = ["# tuimon compare", "", *[f"- {line}" for line in legend(c)], ""]
    out += ["## What differs", ""]
    if c.differences:
        out += ["| | " + " | ".join(s.letter for s in c.sessions) + " |",
                "|" + "---|" * (len(c.sessions) + 1)]
        out += [f"| {name} | " + " | ".join(_md(v) for v in values) + " |" for name, values in c.differences]
    else:
        out.append("Nothing: the same settings, host, devices and versions.")
    out += ["", "## Changes", "", *[f"- {x.text}" for x in headline(c)]]
    for v in c.variants:
        out += ["", f"### {v.label}", "", "| | " + " | ".join(s.letter for s in c.sessions) + " |",
                "|" + "---|" * (len(c.sessions) + 1)]
        out += [f"| {name} | " + " | ".join(_md(x) for x in row) + " |" for name, row in cells(v)]
    notes = _notes(c, unjudged)
    if notes:
        out += ["", "Notes:", *[f"- {n}" for n in notes]]
    if failures:
        out += ["", "Guard: FAILED", *[f"- {f}" for f in failures]]
    elif cannot:
        out += ["", "Guard: CANNOT TELL", *[f"- {x}" for x in cannot]]
    out += ["", "Changes against A; the median step's 95 % interval holds both sessions' spread "
            f"between processes ({noise_text(c)}), so a change is beyond noise when it leaves out "
            "0 %. Compile time and memory are measured once per process: their change has an "
            "interval only when both sessions ran --repeats 2 or more."]
    return "\n".join(out) + "\n"


def to_json(c: Comparison, failures: list[str] = (), unjudged: list[str] = (),
            cannot: list[str] = ()) -> str:
    doc = {
        "sessions": [{"letter": s.letter, "path": str(s.path), "name": s.name,
                      "started": s.meta.get("started"), "status": s.meta.get("status")}
                     for s in c.sessions],
        "differences": [{"what": name, "values": values} for name, values in c.differences],
        "variants": [{
            "label": v.label, "mode": v.key[0], "precision": v.key[1], "axes": dict(v.key[2]),
            "runs": [r.run if r is not None else None for r in v.rows],
            "median_ms": [r.timing.median_ms if r is not None else None for r in v.rows],
            "median_change": [m.to_dict() if m else None for m in v.median],
            "compile_s": [r.compile.compile_s if r is not None else None for r in v.rows],
            "compile_change": [m.to_dict() if m else None for m in v.compile],
            "warm_compile_s": [(r.warm.starts.get("warm") or {}).get("compile_s") if r is not None else None
                               for r in v.rows],
            "warm_compile_change": [m.to_dict() if m else None for m in v.warm_compile],
            "unreliable": [doubt_text(x) if x is not None else None for x in v.unreliable],
            "detectable_pct": [None if x is None else round(x, 2) for x in v.detectable],
            "metrics": [{"name": m.name, "values": m.values,
                         "changes": [x.to_dict() if x else None for x in m.changes]} for m in figures(v)],
        } for v in c.variants],
        "left_out": [note_text(n) for n in c.left_out], "notes": [note_text(n) for n in c.notes],
        "unjudged": list(unjudged),
        "noise": c.noise.to_dict() if c.noise is not None else None,
        "guard": {"failed": bool(failures), "failures": list(failures), "cannot_tell": list(cannot)},
    }
    return json.dumps(doc, indent=2) + "\n"


def print_rich(console: Console, c: Comparison, failures: list[str] = (), unjudged: list[str] = (),
               cannot: list[str] = ()) -> None:
    for line in legend(c):
        console.print(line, highlight=False, markup=False)
    if c.differences:
        t = Table("", *(s.letter for s in c.sessions), title="What differs", title_justify="left")
        for name, values in c.differences:
            t.add_row(Text(name), *(Text(v) for v in values))
        console.print(t)
    else:
        console.print("what differs: nothing (the same settings, host, devices and versions)",
                      highlight=False)
    for x in headline(c):  # a median step slower beyond noise in red
        console.print(Text(x.text, style="bold red" if x.kind == WARNING else None))
    for v in c.variants:
        t = Table("", *(s.letter for s in c.sessions), title=v.label, title_justify="left")
        for name, row in cells(v, "\n"):
            t.add_row(Text(name), *(Text(x) for x in row))
        console.print(t)
    for note in _notes(c, unjudged):
        console.print(f"note: {note}", style="yellow", highlight=False, markup=False)
    console.print(f"spread between processes: {noise_text(c)}", highlight=False, markup=False)
    for f in failures:
        console.print(f"guard failed: {f}", style="bold red", highlight=False, markup=False)
    for x in [] if failures else cannot:
        console.print(f"guard cannot tell: {x}", style="bold yellow", highlight=False, markup=False)


def noise_text(c: Comparison) -> str:
    """'±6.2 % a process (pooled over 4 variants, 8 processes)' or the assumed spread."""
    n = c.noise
    if n is None:
        return "not known"
    if not n.measured:
        out = (f"not measured, one process a variant: ±{n.pct:.0f} % assumed "
               "(--repeats 3 or more measures it)")
        if n.session_sd:
            out += f", ±{n.session_pct:.0f} % a session assumed (--session-spread)"
        return out
    out = f"±{n.pct:.1f} % a process (pooled over {n.variants} variants, {n.processes} processes)"
    if n.session_sd:  # assumed: the machine's state, which two sessions need not share
        out += f", ±{n.session_pct:.0f} % a session assumed (--session-spread)"
    return out


def _md(text: str) -> str:
    return text.replace("|", "\\|")

def headline(c: Comparison) -> list[Line]:
    """One line per variant and session: the median step's change, and the compile time's; a
    warning where the median step got slower beyond noise."""
    out = []
    for v in c.variants:
        for s, m, comp, shaky in zip(c.sessions[1:], v.median[1:], v.compile[1:], v.unreliable[1:],
                                     strict=True):
            if v.rows[c.sessions.index(s)] is None:
                continue
            least = v.detectable[c.sessions.index(s)]
            parts = [f"median step {change_text(m)}" if m is not None else "median step: not measured"]
            too_wide = v.untold[c.sessions.index(s)] if v.untold else False  # no least to say
            if m is not None and least is not None and not too_wide:
                parts[0] += f" (tells ±{least:.0f} % or more)"
            if comp is not None:
                parts.append(f"compile time {change_text(comp)}")
            hot = v.warm_compile[c.sessions.index(s)] if v.warm_compile else None
            if hot is not None:
                parts.append(f"warm compile time {change_text(hot)}")
            if shaky:
                parts.append(f"unreliable: {doubt_text(shaky)}")
            slower = m is not None and m.significant and m.ratio > 1
            out.append(Line(WARNING if slower else NOTE, f"{v.label}, {s.letter} vs A: " + "; ".join(parts),
                            {"label": v.label, "letter": s.letter}))
    return out
