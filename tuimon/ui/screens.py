"""Modal screens: the key help and the quit question (stop, detach or cancel)."""

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


class QuitScreen(ModalScreen[str | None]):
    """Answers "stop" (stop the runs and quit), "detach" (quit, the runs go on; only offered
    when the runs belong to a detached supervisor) or None (stay)."""

    BINDINGS = [Binding("s,y", "answer('stop')", "stop & quit"),
                Binding("d", "answer('detach')", "detach"),
                Binding("n,c,escape", "answer(None)", "cancel")]

    def __init__(self, active: int, can_detach: bool = False, web: bool = False) -> None:
        super().__init__()
        self.active = active
        self.can_detach = can_detach
        self.web = web  # a tab of `tuimon serve`: coming back is reloading the page

    def compose(self) -> ComposeResult:
        with Vertical(id="quit"):
            text = (f"{self.active} run(s) still going.\n"
                    "[b]s[/b]    stop them and quit (the summary is written)")
            if self.can_detach:
                back = "reload this page" if self.web else "[b]tuimon attach[/b]"
                text += f"\n[b]d[/b]    detach: they go on; come back with {back}"
            yield Static(text + "\n[b]esc[/b]  cancel")
            with Horizontal():
                yield Button("Stop runs (s)", variant="error", id="stop")
                if self.can_detach:
                    yield Button("Detach (d)", variant="primary", id="detach")
                yield Button("Cancel (esc)", id="cancel")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(None if event.button.id == "cancel" else event.button.id)

    def action_answer(self, answer: str | None) -> None:
        if answer == "detach" and not self.can_detach:
            return
        self.dismiss(answer)
