"""Every key of the TUI in one table: its binding, its footer label, the action it runs and the
line the help screen and the command palette show. The app's BINDINGS, the help screen and the
palette are all made from it, so a key is added in one place."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from textual.app import SystemCommand
from textual.binding import Binding


@dataclass(frozen=True)
class Key:
    keys: str  # as Textual binds them: "m", "question_mark", "left"
    action: str  # the app's action, with its arguments: "mode(1)"
    label: str  # the footer's word
    help: str | None = None  # the help screen's line (None: shown under another key's line)
    shown: str | None = None  # how the help names the key, when not ``keys``
    footer: bool = True
    changes_runs: bool = False  # refused (greyed out) in a read-only viewer
    palette: bool = True  # offered in the command palette (not a cursor's move)


KEYS = [
    Key("m", "mode(1)", "mode→", "next / previous compile mode of the focused panel (restarts it)",
        shown="m / M", changes_runs=True),
    Key("M", "mode(-1)", "mode←", footer=False, changes_runs=True),
    Key("a", "precision", "fp32/amp", "toggle the focused panel's precision fp32 ↔ amp (restarts it)",
        changes_runs=True),
    Key("r", "restart", "restart", "restart the focused run", changes_runs=True),
    Key("space", "pause", "pause", "pause / resume the focused run (at a step boundary)",
        changes_runs=True),
    Key("n", "add", "add", "add a panel: pick a variant not shown yet (modes, precisions, --set "
        "axis values)", changes_runs=True),
    Key("x", "close_panel", "close", "stop the focused run and close its panel", changes_runs=True),
    Key("e", "export", "export", "export summary.md / .json / steps.csv now, and report.html "
        "(written in the background)"),
    Key("l", "toggle_log", "log", "show / hide the focused run's log"),
    Key("c", "toggle_compile", "compile",
        "show / hide the compile pane: compiles, phases, graph breaks, recompiles"),
    Key("p", "profile", "profile",
        "capture a torch.profiler window of the focused run (opens the profiler pane)",
        changes_runs=True),
    Key("P", "toggle_profiler", "profiler",
        "show / hide the profiler pane: top ops, step split, modules, syncs, trace", footer=False),
    Key("w", "toggle_why", "why", "show / hide why compile did not help the focused variant: "
        "findings, evidence, what to try", footer=False),
    Key("up", "why_cursor(-1)", "↑", "in the why pane: select the focused variant's previous / next "
        "finding (each says the fix t would try)", shown="↑ / ↓", footer=False, palette=False),
    Key("down", "why_cursor(1)", "↓", footer=False, palette=False),
    Key("t", "try_fix", "try fix", "in the why pane: try the selected finding's fix now, as a new panel "
        "(the focused variant with that fix, raced beside it)", footer=False, changes_runs=True),
    Key("b", "toggle_backward", "bwd attrib.",
        "backward attribution (module backward spans) on / off for the next capture", footer=False),
    Key("d", "dump", "dump stacks", "dump the focused run's Python stacks into its log (a run that "
        "seems hung); l shows it", footer=False, changes_runs=True),
    Key("k", "ranks", "ranks", "rank view of the focused torchrun job: one row per rank (k or "
        "escape: back)", footer=False),
    Key("left", "focus_previous", "←", "move focus between panels (between charts in the overlay)",
        shown="tab ← →", footer=False),
    Key("right", "focus_next", "→", footer=False),
    Key("question_mark", "help", "help", "this help", shown="?"),
    Key("q", "quit_app", "quit", "quit: stop the runs, or detach and leave them running (tuimon "
        "attach)"),
    # After help and quit, so those stay in a narrow footer.
    Key("o", "overlay", "overlay",
        "overlay: every run on one chart (by step, by wall time, loss, CPU / GPU); o again: panels"),
    Key("z", "zoom", "zoom", "zoom the focused chart full screen (← → next chart); escape returns"),
    Key("y", "log_loss", "log loss", "loss charts: log / linear y axis", footer=False),
    Key("escape", "back", "back", "back from the zoom or the overlay", footer=False),
]

BINDINGS = [Binding(k.keys, k.action, k.label, show=k.footer) for k in KEYS]
# (key as shown, what it does): the help screen's rows.
HELP = [(k.shown or k.keys, k.help) for k in KEYS if k.help]
CHANGES_RUNS = {k.action.split("(")[0] for k in KEYS if k.changes_runs}


def palette(app, read_only: bool) -> Iterable[SystemCommand]:
    """The keys' actions in the command palette (those that change runs left out when read-only)."""
    for k in KEYS:
        if (k.help is None or not k.palette or k.action.startswith("focus_")
                or (read_only and k.changes_runs)):
            continue
        yield SystemCommand(f"{k.help} [{k.shown or k.keys}]", k.help,
                            lambda action=k.action: app.run_action(action))
