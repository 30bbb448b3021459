"""Events into the model between redraws, never inside one (docs/tui.md#redraws). The source's
thread only appends batches to the inbox; the loop folds them in slices of at most ``SLICE``,
so a key or a redraw waits for one slice at most. The summary is computed on a thread at most
every ``SUMMARY_EVERY`` s (or 100x its cost); nothing is folded while it runs, since the
collector is not shared."""

from __future__ import annotations

from collections import deque

SLICE = 1000  # events folded at most in one go
SUMMARY_EVERY = 1.0  # seconds: the least age of the numbers shown while events stream in


class Folder:
    def __init__(self, app) -> None:
        self.app = app
        self.inbox: deque[list[dict]] = deque()
        self._rest: list[dict] = []  # a batch larger than a slice: what is left of it
        self._asked = False  # a fold is queued on the loop

    def deliver(self, batch: list[dict]) -> None:
        """A batch of events (any thread): folded soon, on the loop."""
        self.inbox.append(batch)
        self.ask()

    def ask(self) -> None:
        if not self._asked:
            self._asked = True
            self.app.call_later(self.fold)  # thread-safe: Textual posts it to the loop

    @property
    def waiting(self) -> bool:
        return bool(self.inbox or self._rest)

    def fold(self) -> None:
        """One slice (on the loop); the next one is queued behind whatever is waiting."""
        self._asked = False
        model = self.app.model
        if model.busy:  # the summary's thread reads the collector; it asks again when done
            return
        batch = self._take()
        if batch:
            ended = model.ended
            model.add_all(batch)
            self.app.folded(batch, ended)
        if self.waiting:
            self.ask()

    def _take(self) -> list[dict]:
        batch, self._rest = self._rest[:SLICE], self._rest[SLICE:]
        while self.inbox and len(batch) < SLICE:
            more = self.inbox.popleft()
            room = SLICE - len(batch)
            batch.extend(more[:room])
            self._rest = more[room:]
        return batch

    def after_frame(self) -> None:
        """Once a frame is on screen: a fresh summary, on a thread, when the numbers are due."""
        model = self.app.model
        model.refresh_summary(max(SUMMARY_EVERY, 100 * model.summary_cost), done=self.ask)
        if self.waiting:  # a fold turned away while the summary ran, and nothing asked since
            self.ask()
