"""The diagnosis in words: the document's "Why" section (report/document.py), each diagnosed
variant a heading line and each of its findings (analysis/why: codes and figures) a finding line
under it, its evidence and what to try under that. summary.md, summary.json's ``why``, the
terminal's lines and the TUI's why pane all render this section."""

from __future__ import annotations

from tuimon.analysis import HIGH, MEDIUM, Finding, RunStats, SessionSummary, columns, diagnose, tried
from tuimon.report.document import ADVICE, EVIDENCE, FINDING, HEADING, TEXT, Line, Section
from tuimon.report.price_text import account_lines, price_text
from tuimon.report.table import speedup_text
from tuimon.report.why_words import say

LEVEL = {HIGH: "high", MEDIUM: "medium"}
TITLE = "Why compile did not help, and what bounds each step"
NOTHING = ("No finding in what tuimon recorded. Without a profiler capture the op-level rules cannot "
           "run: a run of 30 steps or more gets one automatically.")


def finding_line(f: Finding, row: RunStats | None = None) -> Line:
    """A finding: its title, with its rule, code, severity and price as figures; the fixes
    ``tuimon try`` may race for it (the TUI's t) and its row's repeated block (regional's)."""
    price = price_text(f.price)
    figures = {"rule": f.rule, "code": f.code, "severity": f.severity, "level": LEVEL.get(f.severity),
               "cost_ms": f.cost_ms, "price": price, "fixes": tried.suggests(f),
               "repeated": row.repeated if row else None}
    under = [Line(EVIDENCE, text) for text in [*map(say, f.evidence), *account_lines(f.price)]]
    under += [Line(ADVICE, say(p)) for p in f.advice]
    return Line(FINDING, say(f.what), figures, tuple(under))


def speed(row: RunStats | None) -> str | None:
    """A compiled variant's speedup against its baseline, in words (None: none measured)."""
    if row is None:
        return None
    if row.compile.nothing_compiled:  # no speedup to weigh: two eager runs
        return "nothing was compiled: it ran eager"
    if row.compare.speedup is None:
        return None
    if row.compare.untold is not None:  # no figure to name the baseline beside
        return f"against {row.compare.baseline}: {speedup_text(row)}"
    return speedup_text(row).replace("×", f"× {row.compare.baseline}", 1)


def headline(label: str, compiled: bool, speedup: str | None, helped: bool, doubted: bool) -> str:
    if not compiled:
        return f"{label} (not compiled): what bounds its step"
    if speedup is None:
        return f"{label}: no speedup measured (no eager run of its precision finished steps)"
    verb = ("cannot tell whether compile helped" if doubted
            else "compile helped" if helped else "compile did not help")
    return f"{label}: {speedup} — {verb}"


def section(summary: SessionSummary) -> Section:
    """Every diagnosed variant, its findings under it (empty without a variant to diagnose)."""
    rows = {r.run: r for r in columns(summary)}
    lines = []
    for v in diagnose(summary):
        row = rows.get(v.run)
        speedup = speed(row) if v.compiled else None
        figures = {"run": v.run, "label": v.label, "compiled": v.compiled, "speedup": speedup,
                   "helped": v.helped, "doubted": v.doubted}
        found = tuple(finding_line(f, row) for f in v.findings) or (Line(TEXT, NOTHING),)
        lines.append(Line(HEADING, headline(v.label, v.compiled, speedup, v.helped, v.doubted),
                          figures, found))
    return Section("why", TITLE, tuple(lines))


def as_json(why: Section) -> list[dict]:
    """summary.json's ``why``: each variant's figures, its headline and its findings in words."""
    out = []
    for h in why.lines:
        findings = [{"rule": f.figures["rule"], "title": f.text,
                     "evidence": [x.text for x in f.under if x.kind == EVIDENCE],
                     "advice": [x.text for x in f.under if x.kind == ADVICE],
                     **{k: f.figures[k] for k in ("severity", "cost_ms", "code", "price")}}
                    for f in h.under if f.kind == FINDING]
        out.append({**h.figures, "headline": h.text, "findings": findings})
    return out
