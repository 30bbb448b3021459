"""The summary's words as the tests read them, from its document (report/sections.py): each
diagnosed variant in summary.json's ``why`` shape, its keys as attributes (``v.findings``,
``f.title``, ``v.headline``), and the lines the terminal prints of it."""

from __future__ import annotations

from types import SimpleNamespace

from tuimon.headless import why_lines
from tuimon.report import why_text


def _ns(x):
    if isinstance(x, dict):
        return SimpleNamespace(**{k: _ns(v) for k, v in x.items()})
    return [_ns(v) for v in x] if isinstance(x, list) else x


def worded(summary) -> list[SimpleNamespace]:
    """Every diagnosed variant and its findings, in words."""
    return [_ns(v) for v in why_text.as_json(why_text.section(summary))]


def top_lines(summary, n: int = 3) -> list[str]:
    """What the terminal prints of the diagnosis: each variant's headline, its first findings."""
    return [text for text, _ in why_lines(why_text.section(summary), n)]
