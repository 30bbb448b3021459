"""The keys that steer runs (mode, precision, restart, pause, add, try, close, profile, dump, quit):
each becomes a command to the source (a daemon over its socket, or a live supervisor), and a
refusal or a lost daemon becomes a notice, never a crash. A mixin of the app (ui/app.py)."""

from __future__ import annotations

from textual.widgets import RichLog

from tuimon.report.try_text import no_fix_line
from tuimon.ui.add_screen import AddScreen
from tuimon.ui.model import RunLive
from tuimon.ui.screens import QuitScreen
from tuimon.ui.widgets.profiler_pane import ProfilerPane
from tuimon.ui.widgets.run_panel import RunPanel
from tuimon.ui.widgets.why_pane import WhyPane, pick_for
from tuimon.variants import MODES, SCRIPT, Variant, choices


class Steering:
    def _steer(self) -> RunLive | None:
        live = self.focused_run()
        if live is None:
            self.notify("no run to act on yet", severity="warning")
        return live

    def _steer_live(self) -> RunLive | None:
        """The focused run, if it is still going (capture and dump need a live process)."""
        live = self._steer()
        if live is not None and not live.active:
            self.notify(f"{live.label} has ended", severity="warning")
            return None
        return live

    def _command(self, name: str, *args):
        """A command to the source and its result; a refusal or a lost supervisor is a notice,
        not a crash (and None)."""
        return self._send(name, *args)[1]

    def _send(self, name: str, *args, **kwargs) -> tuple[bool, object]:
        """(whether the command went through, its result). The daemon may be gone even while
        the model still shows runs going: another viewer stopped the session, or it was killed."""
        try:
            return True, getattr(self.source, name)(*args, **kwargs)
        except Exception as exc:  # noqa: BLE001 - e.g. the detached supervisor has gone
            self.notify(f"{name} failed: {exc}", severity="error")
            return False, None

    def _restart_as(self, live: RunLive, variant: Variant, said: str) -> None:
        if (new := self._command("restart", live.run, variant)) is not None:
            self.notify(said.format(new=new))

    def action_mode(self, step: int) -> None:
        if (live := self._steer()) is None:
            return
        mode = MODES[(MODES.index(live.mode) + step) % len(MODES)] if live.mode in MODES else MODES[0]
        variant = live.variant.but(mode=mode)
        self._restart_as(live, variant, f"{live.label} → {variant.label} ({{new}})")

    def action_precision(self) -> None:
        if (live := self._steer()) is None:
            return
        if live.precision == SCRIPT:
            self.notify("a script owns its precision (its own autocast): tuimon does not toggle it",
                        severity="warning")
            return
        variant = live.variant.but(precision="amp" if live.precision == "fp32" else "fp32")
        self._restart_as(live, variant, f"{live.label} → {variant.label} ({{new}})")

    def action_restart(self) -> None:
        if (live := self._steer()) is not None:
            self._restart_as(live, live.variant, f"restarting {live.label} as {{new}}")

    def action_pause(self) -> None:
        if (live := self._steer()) is None:
            return
        if live.state == "paused":
            self._command("resume", live.run)
            self.notify(f"resuming {live.label}")
        elif live.active:
            self._command("pause", live.run)
            self.notify(f"pausing {live.label} at the next step boundary")
        else:
            self.notify(f"{live.label} has ended; r restarts it", severity="warning")

    def action_add(self) -> None:
        """Offer the variants not shown (variants.choices); the one picked gets a panel."""
        focused = self.focused_run()
        offered = choices({r.variant for r in self.model.panel_runs()},
                          focused.variant if focused else None, self.model.summary().axes)

        def picked(variant: Variant | None) -> None:
            if variant is not None and (new := self._command("add", variant)) is not None:
                self.notify(f"added {variant.label} ({new})")

        self.push_screen(AddScreen(offered), picked)

    def action_try_fix(self) -> None:
        """t: the why pane's selected finding's fix on the focused variant, as a new panel (the
        variant with the fix axis, raced beside it: analysis/tried.py says what it did)."""
        pane = self.query_one(WhyPane)
        if not pane.has_class("visible"):
            self.notify("t tries a finding's fix: open the why pane with w, pick the finding with ↑ ↓",
                        severity="warning")
            return
        if (live := self._steer()) is None:
            return
        label = live.variant.label
        if (finding := pane.selected(live)) is None:
            self.notify(f"t: no finding of {label} to try a fix for", severity="warning")
            return
        chosen = pick_for(live, finding)
        if chosen.value is None:
            self.notify(no_fix_line(chosen, label), severity="warning")
            return
        variant = live.variant.with_fix(chosen.value)
        shown = next((r for r in self.model.panel_runs() if r.variant == variant), None)
        if shown is not None:
            self.notify(f"{variant.label} is shown already: its panel is focused")
            panel = next((p for p in self.query(RunPanel) if p.run == shown.run), None)
            if panel is not None:
                self.views.panel = panel
                panel.focus()
            return
        if (new := self._command("add", variant)) is not None:
            self.notify(f"trying {chosen.fix} on {label}: added {variant.label} ({new}); the why "
                        "pane says what it did once both have steps")

    def action_close_panel(self) -> None:
        if (live := self._steer()) is None:
            return
        if live.active:
            self._command("stop", live.run)
        self.model.close_panel(live.run)
        self.notify(f"closed {live.label}; its run stays in the session and the summary")

    def action_profile(self) -> None:
        if (live := self._steer_live()) is None:
            return
        options = {"backward": True} if self.backward_next else {}
        if not self._send("profile", live.run, **options)[0]:
            return
        self.query_one(ProfilerPane).add_class("visible")
        self.notify(f"profiling {live.label} from its next step boundary"
                    f"{' with backward attribution' if self.backward_next else ''}")

    def action_dump(self) -> None:
        if (live := self._steer_live()) is None:
            return
        if not self._send("dump", live.run)[0]:
            return
        self.query_one("#log", RichLog).add_class("visible")
        self.notify(f"{live.label}: Python stacks written to its log (shown below)")

    def action_quit_app(self) -> None:
        active = [r for r in self.model.runs.values() if r.active]
        if self.source.read_only or not active or self.model.ended:
            self._stop_and_exit()
            return

        def answered(choice: str | None) -> None:
            if choice == "stop":
                self.notify("stopping the runs…")
                self._stop_and_exit()
            elif choice == "detach":
                self.source.detach()
                self.exit("detached")

        self.push_screen(QuitScreen(len(active), can_detach=hasattr(self.source, "detach"),
                                    web=self.is_web), answered)

    def _stop_and_exit(self) -> None:
        self.run_worker(self._close_source, thread=True, exclusive=True, group="shutdown")

    def _close_source(self) -> None:
        self.source.close()
        self.call_from_thread(self.exit, self.model.ended or "closed")
