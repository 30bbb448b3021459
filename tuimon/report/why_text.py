"""The diagnosis in words: each variant's findings (analysis/why: codes and figures) worded once
(``worded``), for the "Why" section of summary.md, summary.json's ``why``, the headless output's
top lines and the TUI's pane (ui/widgets/why_pane.py draws the same words with rich)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from tuimon.analysis import (
    HIGH,
    MEDIUM,
    Finding,
    RunStats,
    SessionSummary,
    VariantWhy,
    columns,
    diagnose,
    tried,
)
from tuimon.report.price_text import account_lines, price_text
from tuimon.report.table import speedup_text
from tuimon.report.why_words import say

SEVERITY = {HIGH: "high", MEDIUM: "medium"}


HEADING = "## Why compile did not help, and what bounds each step"


@dataclass
class Said:
    """A finding in words: its title (what holds the variant back), evidence and what to try."""

    rule: str
    title: str
    evidence: list[str]
    advice: list[str]
    severity: int
    cost_ms: float | None
    code: str
    fixes: list[str] = field(default_factory=list)  # what tuimon try may race for it (the TUI's t)
    repeated: dict | None = None  # its row's repeated block (regional's: tried.pick), if said
    price: str | None = None  # what it costs a step or a start (report/price_text.py)

    def to_dict(self) -> dict:
        out = asdict(self)
        del out["fixes"], out["repeated"]  # summary.json's why as it was (its tried section says
        # what was raced)
        return out


@dataclass
class VariantSaid:
    run: str
    label: str
    speedup: str | None  # "0.91× eager/fp32 (95 % CI 0.82–1.02), within noise"; None: no baseline
    helped: bool
    findings: list[Said] = field(default_factory=list)
    compiled: bool = True
    doubted: bool = False  # its speedup is unreliable: whether compile helped cannot be told

    def to_dict(self) -> dict:
        return {"run": self.run, "label": self.label, "compiled": self.compiled,
                "speedup": self.speedup, "helped": self.helped, "doubted": self.doubted,
                "findings": [f.to_dict() for f in self.findings]}


def said(f: Finding, row: RunStats | None = None) -> Said:
    return Said(f.rule, say(f.what), [say(p) for p in f.evidence] + account_lines(f.price),
                [say(p) for p in f.advice], f.severity, f.cost_ms, f.code, tried.suggests(f),
                row.repeated if row else None, price_text(f.price))


def speed(row: RunStats | None) -> str | None:
    """A compiled variant's speedup against its baseline, in words (None: none measured)."""
    if row is None:
        return None
    if row.compile.nothing_compiled:  # no speedup to weigh: two eager runs
        return "nothing was compiled: it ran eager"
    if row.compare.speedup is None:
        return None
    return speedup_text(row).replace("×", f"× {row.compare.baseline}", 1)


def worded(summary: SessionSummary, whys: list[VariantWhy] | None = None) -> list[VariantSaid]:
    """Every diagnosed variant's findings in words (``whys``: diagnose(summary), if done already)."""
    rows = {r.run: r for r in columns(summary)}
    out = []
    for v in diagnose(summary) if whys is None else whys:
        speedup = speed(rows.get(v.run)) if v.compiled else None
        out.append(VariantSaid(v.run, v.label, speedup, v.helped,
                               [said(f, rows.get(v.run)) for f in v.findings], v.compiled,
                               v.doubted))
    return out


def headline(v: VariantSaid) -> str:
    if not v.compiled:
        return f"{v.label} (not compiled): what bounds its step"
    if v.speedup is None:
        return f"{v.label}: no speedup measured (no eager run of its precision finished steps)"
    verb = ("cannot tell whether compile helped" if v.doubted
            else "compile helped" if v.helped else "compile did not help")
    return f"{v.label}: {v.speedup} — {verb}"


def markdown(summary: SessionSummary) -> list[str]:
    """The 'Why' section (empty without a variant to diagnose)."""
    whys = worded(summary)
    if not whys:
        return []
    out = [HEADING, ""]
    for v in whys:
        out.append(f"### {headline(v)}")
        out.append("")
        if not v.findings:
            out += ["No finding in what tuimon recorded. Without a profiler capture the op-level rules "
                    "cannot run: a run of 30 steps or more gets one automatically.", ""]
            continue
        for k, f in enumerate(v.findings, 1):
            level = SEVERITY.get(f.severity)
            out.append(f"{k}. **{f.title}**" + (f" ({level})" if level else "")
                       + (f" — {f.price}" if f.price else ""))
            out += [f"   - {line}" for line in f.evidence]
            out += [f"   - try: {line}" for line in f.advice]
        out.append("")
    return out


def top_lines(summary: SessionSummary, n: int = 3) -> list[str]:
    """For the terminal: each variant's headline and its first findings' titles."""
    out = []
    for v in worded(summary):
        out.append(f"why {headline(v)}:")
        out += [f"  {k}. {f.title}" + (f" — {f.price}" if f.price else "")
                for k, f in enumerate(v.findings[:n], 1)]
        if len(v.findings) > n:
            out.append(f"  and {len(v.findings) - n} more (summary.md, or key w in the TUI)")
        if not v.findings:
            out.append("  no finding in what tuimon recorded")
    return out


def as_json(summary: SessionSummary) -> list[dict]:
    """summary.json's ``why``: each variant's findings in words, with their codes."""
    return [v.to_dict() for v in worded(summary)]
