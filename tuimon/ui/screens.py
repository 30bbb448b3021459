"""Modal screens: the key help and the quit question."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Static


class HelpScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,question_mark,q", "dismiss", "close")]

    def __init__(self, keys: list[tuple[str, str]], read_only: bool) -> None:
        super().__init__()
        self.keys = keys
        self.read_only = read_only

    def compose(self) -> ComposeResult:
        lines = [f"[b]{key:>9}[/b]  {text}" for key, text in self.keys]
        if self.read_only:
            lines.append("\n[dim]replay: read-only, keys that change runs are off[/dim]")
        lines.append("\n[dim]ctrl+p: command palette with every action · escape: close[/dim]")
        with Vertical(id="help"):
            yield Static("[b]tuimon keys[/b]\n\n" + "\n".join(lines))


class QuitScreen(ModalScreen[bool]):
    """Answers True to stop the runs and quit, False to stay."""

    BINDINGS = [Binding("y", "answer(True)", "stop & quit"), Binding("n,escape", "answer(False)", "cancel")]

    def __init__(self, active: int) -> None:
        super().__init__()
        self.active = active

    def compose(self) -> ComposeResult:
        with Vertical(id="quit"):
            yield Static(f"{self.active} run(s) still going. Stop them and quit?\n"
                         "What they measured so far is kept, and the summary is written.")
            with Horizontal():
                yield Button("Stop runs and quit (y)", variant="error", id="yes")
                yield Button("Cancel (n)", id="no")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")

    def action_answer(self, answer: bool) -> None:
        self.dismiss(answer)
