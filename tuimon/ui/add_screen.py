"""``n``: the variants a new panel may run — modes × precisions × the session's ``--set`` axis
values, those not shown yet — in a list; enter adds the highlighted one, escape cancels."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static

from tuimon.variants import Variant


class AddScreen(ModalScreen[Variant | None]):
    BINDINGS = [Binding("escape,q,n", "dismiss(None)", "cancel")]

    def __init__(self, offered: list[Variant]) -> None:
        super().__init__()
        self.offered = offered

    def compose(self) -> ComposeResult:
        with Vertical(id="add"):
            yield Static("[b]add a panel[/b]: enter runs the variant, escape cancels")
            yield OptionList(*(v.label for v in self.offered), id="add-choices")

    def on_mount(self) -> None:
        choices = self.query_one(OptionList)
        choices.highlighted = 0
        choices.focus()

    def on_option_list_option_selected(self, message: OptionList.OptionSelected) -> None:
        self.dismiss(self.offered[message.option_index])
