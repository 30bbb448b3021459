"""The words of every Why finding: one entry a code ("<family>.<what>", as the rules in
analysis/why/ return them), each a function of the point's figures. A new diagnosis adds its
codes here (tests/unit/test_import_rules.py checks that every code a rule returns has its words)."""

from __future__ import annotations

from tuimon.analysis import Point
from tuimon.report.why_words import capture, compiled, flops, step

WORDS = {**compiled.WORDS, **step.WORDS, **capture.WORDS, **flops.WORDS}


def say(p: Point) -> str:
    return WORDS[p.code](p.figures)
