"""Textual's Footer, recomposed only when the keys it shows change.

The stock Footer rebuilds all its key widgets whenever focus moves (tab between panels, the
overlay or the zoom taking focus), which costs 150-250 ms of CPU on a 2-core VM: longer than
a key may take to reach the screen. Focus moving between panels and charts rarely changes
which keys are shown, or which are greyed out.
"""

from __future__ import annotations

from textual.screen import Screen
from textual.widgets import Footer


class KeyFooter(Footer):
    _shown: tuple | None = None

    def bindings_changed(self, screen: Screen) -> None:
        keys = tuple((b.key, b.description, enabled, b.show, tooltip)
                     for _, b, enabled, tooltip in screen.active_bindings.values() if b.show)
        if keys == self._shown and self._bindings_ready:
            return
        self._shown = keys
        super().bindings_changed(screen)
