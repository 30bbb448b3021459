"""matplotlib, kept behind this module: imported only when a report is drawn (never by the TUI's
or the CLI's start; tests/unit/test_import_rules.py), through its object API (no pyplot: no GUI
backend is looked for, no global figure state), and every figure saved as SVG with its text kept
as text (small, searchable, sharp at any zoom) or as PNG.

Why matplotlib: docs/development.md#plotting."""

from __future__ import annotations

import io
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # for the type checker alone: importing matplotlib is for drawing
    from matplotlib.figure import Figure

INSTALL = "pip install 'matplotlib>=3.7'"  # what the one-line error says when it is missing

# The palette (Okabe–Ito: told apart with the common colour-vision deficiencies); eager variants
# take the greys' place first so "eager" reads as the baseline in every figure.
COLORS = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442", "#000000")
EAGER = ("#555555", "#999999", "#333333", "#BBBBBB")
STYLE = {
    "svg.fonttype": "none",  # text stays text: the browser draws it
    "font.family": "sans-serif",
    "font.sans-serif": ["DejaVu Sans", "Helvetica", "Arial", "sans-serif"],
    "font.size": 9,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.color": "#e4e4e4",
    "grid.linewidth": 0.6,
    "legend.frameon": False,
    "legend.fontsize": 8,
    "figure.dpi": 100,
}
WIDTH = 9.0  # inches at 100 dpi: ~900 px, the page's column


class Missing(Exception):
    """matplotlib cannot be imported: the one line says how to install it."""


def _mpl():
    try:
        import matplotlib
        from matplotlib.figure import Figure
    except ImportError as exc:
        raise Missing(f"tuimon report draws its figures with matplotlib, which is not installed "
                      f"({exc}): {INSTALL}") from None
    return matplotlib, Figure


def figure(height: float, width: float = WIDTH) -> Figure:
    """A new matplotlib Figure (constrained layout), outside pyplot."""
    matplotlib, Figure = _mpl()
    with matplotlib.rc_context(STYLE):
        return Figure(figsize=(width, height), layout="constrained")


@dataclass
class Fig:
    """One figure of the page: its file stem, title, caption and the matplotlib Figure."""

    name: str
    title: str
    caption: str
    figure: Figure

    def svg(self) -> str:
        """The figure as an inline <svg> element: no XML prolog, ids salted by its name (two
        figures on one page never share a clip path's id), no date (the same session, the same
        file)."""
        matplotlib, _ = _mpl()
        buf = io.StringIO()
        with matplotlib.rc_context({**STYLE, "svg.hashsalt": self.name}):
            self.figure.savefig(buf, format="svg", metadata={"Date": None})
        text = buf.getvalue()
        return text[text.index("<svg"):]

    def png(self, dpi: int = 150) -> bytes:
        matplotlib, _ = _mpl()
        buf = io.BytesIO()
        with matplotlib.rc_context(STYLE):
            self.figure.savefig(buf, format="png", dpi=dpi, metadata={"Software": None})
        return buf.getvalue()


def palette(labels: list[str], eager: set[str]) -> dict[str, str]:
    """A colour per variant label, in the order given; eager ones grey."""
    out, k, g = {}, 0, 0
    for label in labels:
        if label in out:
            continue
        if label in eager:
            out[label] = EAGER[g % len(EAGER)]
            g += 1
        else:
            out[label] = COLORS[k % len(COLORS)]
            k += 1
    return out


def styled(fn):
    """Run a drawing function under the report's style (rcParams apply while artists are made)."""
    def wrapper(*args, **kwargs):
        matplotlib, _ = _mpl()
        with matplotlib.rc_context(STYLE):
            return fn(*args, **kwargs)
    wrapper.__doc__, wrapper.__name__ = fn.__doc__, fn.__name__
    return wrapper
