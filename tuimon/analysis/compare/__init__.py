"""``tuimon compare``: sessions side by side. ``sessions`` reads them (through
``analysis.read.load_session``) and matches their variants, ``settings`` says what differs
between them, ``changes`` finds each shared variant's changes (computed in ``stats.change``) and
runs the regression guard. ``report.compare_figures`` / ``report.compare_text`` write it out."""

from tuimon.analysis.compare.changes import PHASES, Comparison, VariantDiff, compare_sessions, guard
from tuimon.analysis.compare.sessions import Session, label, open_session

__all__ = ["PHASES", "Comparison", "Session", "VariantDiff", "compare_sessions", "guard", "label",
           "open_session"]
