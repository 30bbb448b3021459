"""The diagnosis as text: the "Why" section of summary.md and the headless output's top lines.
The TUI's pane (ui/widgets/why_pane.py) draws the same findings with rich."""

from __future__ import annotations

from tuimon.analysis import HIGH, MEDIUM, VariantWhy

SEVERITY = {HIGH: "high", MEDIUM: "medium"}


HEADING = "## Why compile did not help, and what bounds each step"


def headline(v: VariantWhy) -> str:
    if not v.compiled:
        return f"{v.label} (not compiled): what bounds its step"
    if v.speedup is None:
        return f"{v.label}: no speedup measured (no eager run of its precision finished steps)"
    verb = "compile helped" if v.helped else "compile did not help"
    return f"{v.label}: {v.speedup} — {verb}"


def markdown(whys: list[VariantWhy]) -> list[str]:
    """The 'Why' section (empty without a variant to diagnose)."""
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
            out.append(f"{k}. **{f.title}**" + (f" ({level})" if level else ""))
            out += [f"   - {line}" for line in f.evidence]
            out += [f"   - try: {line}" for line in f.advice]
        out.append("")
    return out


def top_lines(whys: list[VariantWhy], n: int = 3) -> list[str]:
    """For the terminal: each variant's headline and its first findings' titles."""
    out = []
    for v in whys:
        out.append(f"why {headline(v)}:")
        out += [f"  {k}. {f.title}" for k, f in enumerate(v.findings[:n], 1)]
        if len(v.findings) > n:
            out.append(f"  and {len(v.findings) - n} more (summary.md, or key w in the TUI)")
        if not v.findings:
            out.append("  no finding in what tuimon recorded")
    return out
