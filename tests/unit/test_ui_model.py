"""The TUI's model on synthetic sessions: which run each panel shows (no screen needed)."""

from __future__ import annotations

from test_stats import noisy, run_events

from tuimon import events
from tuimon.ui.model import SessionModel


def rounds(k: int, mode: str) -> list[list[dict]]:
    return [run_events(f"{mode}-fp32" + (f"-{i}" if i > 1 else ""), mode, "fp32",
                       noisy(50, 10.0, seed=i), replicate=i) for i in range(1, k + 1)]


def test_a_later_round_takes_over_its_variants_panel_when_it_starts():
    eager, compiled = rounds(3, "eager"), rounds(3, "default")
    model = SessionModel()
    queued = [e for evs in (*eager, *compiled) for e in evs if e["type"] == "run_queued"]
    model.add_all(queued)  # every round is queued at the start of a session
    assert model.panels == ["eager-fp32", "default-fp32"]
    for i in range(3):
        model.add_all(eager[i][1:] + compiled[i][1:])
        suffix = f"-{i + 1}" if i else ""
        assert model.panels == [f"eager-fp32{suffix}", f"default-fp32{suffix}"]
    assert model.runs["default-fp32-3"].label == "default/fp32 #3/9"
    summary = model.summary()
    assert [v.label for v in summary.variants] == ["eager/fp32", "default/fp32"]


def test_a_closed_panel_does_not_come_back_with_its_runs_late_events():
    model = SessionModel()
    evs = run_events("eager-fp32", "eager", "fp32", noisy(20, 10.0))
    model.add_all(evs[:5])
    model.close_panel("eager-fp32")
    model.add_all(evs[5:])
    assert model.panels == []


def test_later_rounds_stopped_before_they_start_do_not_take_the_panel():
    eager = rounds(3, "eager")
    model = SessionModel()
    model.add_all([evs[0] for evs in eager])  # all three rounds queued
    model.add_all(eager[0][1:20])  # round 1 measures
    stopped = [events.make(events.FINISHED, f"eager-fp32-{i}", reason="stopped") for i in (2, 3)]
    model.add_all(stopped)  # q -> stop: the queued rounds never start
    assert model.panels == ["eager-fp32"]


class _Loop:
    """An app's event loop as Folder sees it: callbacks queued by call_later, run by hand."""

    def __init__(self, busy: bool = False) -> None:
        self.queued: list = []
        self.folds: list[list[int]] = []
        self.model = self
        self.busy, self.ended, self.summary_cost = busy, None, 0.0

    def call_later(self, callback) -> None:
        self.queued.append(callback)

    def add_all(self, batch: list[dict]) -> None:
        self.folds.append([e["i"] for e in batch])

    def folded(self, batch, ended) -> None:
        pass

    def refresh_summary(self, max_age: float, done=None) -> bool:
        return False

    def run(self) -> None:
        while self.queued:
            self.queued.pop(0)()


def test_events_are_folded_in_slices_in_order_and_none_wait_behind_a_summary():
    from tuimon.ui.folding import SLICE, Folder

    loop = _Loop()
    folder = Folder(loop)
    folder.deliver([{"i": i} for i in range(2 * SLICE + 500)])
    folder.deliver([{"i": i} for i in range(2 * SLICE + 500, 2 * SLICE + 800)])
    assert len(loop.queued) == 1  # one fold asked for, however many batches came
    loop.run()
    assert [len(f) for f in loop.folds] == [SLICE, SLICE, 800]  # each its own callback
    assert [i for f in loop.folds for i in f] == list(range(2 * SLICE + 800))
    # While the summary's thread reads the model nothing is folded; the next frame asks again.
    loop.busy, loop.folds = True, []
    folder.deliver([{"i": 0}])
    loop.run()
    assert loop.folds == [] and folder.waiting
    loop.busy = False
    folder.after_frame()
    loop.run()
    assert loop.folds == [[0]] and not folder.waiting
