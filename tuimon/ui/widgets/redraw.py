"""Updating a Static without redrawing more than needed: Textual lays out the whole screen again
(and repaints every widget) on a Static's update unless told its height did not change."""

from __future__ import annotations

from rich.cells import cell_len
from rich.text import Text
from textual.widgets import Static


def update(widget: Static, text: Text) -> None:
    """Redraws ``widget`` only when its text changed, and lays the screen out again only when
    its height may have changed."""
    old = getattr(widget, "_shown", None)
    if old != text:
        widget._shown = text
        width = max(1, widget.content_size.width)
        widget.update(text, layout=old is None or height(old, width) != height(text, width))


def height(text: Text, width: int) -> int:
    """Lines ``text`` takes at ``width`` (wrapped at the width, a cell-width estimate)."""
    return sum(max(1, -(-cell_len(line) // width)) for line in text.plain.split("\n"))
