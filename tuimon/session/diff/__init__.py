"""``tuimon compare``: sessions side by side. ``sessions`` reads them (through ``export.load``)
and matches their variants, ``settings`` says what differs between them, ``report`` lays out
each variant's figures and changes (computed in ``stats.change``) and the regression guard,
``render`` writes it as Markdown, JSON or rich tables."""

from tuimon.session.diff.report import Comparison, compare_sessions, guard, headline
from tuimon.session.diff.sessions import Session, open_session

__all__ = ["Comparison", "Session", "compare_sessions", "guard", "headline", "open_session"]
