"""The TUI on torchrun jobs (synthetic sessions, no torchrun): the model's ranks, the panel's rank
strip, and the rank view (k) at 80x24 with 8 ranks and with 64 (grouped rows)."""

from __future__ import annotations

import asyncio

from rich.console import Console
from test_rank_stats import job_events

from tuimon import events
from tuimon.ui.app import TuimonApp
from tuimon.ui.model import SessionModel
from tuimon.ui.sources import ReplaySource
from tuimon.ui.widgets.rank_strip import RankStrip
from tuimon.ui.widgets.rank_view import RankScreen


def session(tmp_path, evs):
    d = tmp_path / "s"
    d.mkdir()
    (d / "events.jsonl").write_text("".join(events.encode(e) for e in evs))
    (d / "meta.json").write_text('{"name": "s", "status": "done"}')
    return d


def text_of(renderable, width: int = 80) -> str:
    console = Console(width=width, record=True, color_system=None)
    console.print(renderable)
    return console.export_text()


def test_the_model_follows_each_rank_and_the_jobs_state():
    model = SessionModel()
    evs = job_events(world=4, slow_rank=1, steps=60)
    model.add_all(evs[:-5])  # every step in, no rank ended yet
    live = model.runs["eager-script"]
    assert sorted(live.ranks) == [0, 1, 2, 3] and live.world_size == 4
    assert all(r.steps == 60 and r.state == "steady" for r in live.ranks.values())
    assert live.steps == 60 and live.history.steps.count == 60  # the job's steps, charted
    assert live.state == "steady"
    model.add(events.make(events.PHASE, "eager-script", phase="paused", turn=True, at=60, rank=0))
    assert live.state == "steady"  # one rank paused is not the job
    for r in (1, 2, 3):
        model.add(events.make(events.PHASE, "eager-script", phase="paused", turn=True, at=60, rank=r))
    assert live.state == "waiting turn"
    model.add(events.make(events.FAILED, "eager-script", rank=2, stage="step", error="E",
                          message="m", what="E: m"))
    assert live.state == "failed" and live.error == "rank 2: E: m"
    assert live.ranks[2].state == "failed"
    own = model.rank_own("eager-script")
    assert sorted(own) == [0, 1, 2, 3] and len(own[1]) == 59


async def redraws(pilot, app, n: int) -> None:
    """``n`` redraws, each after the replay had 0.2 s to deliver."""
    for _ in range(n):
        await pilot.pause(0.2)
        app.tick()

def test_rank_strip_and_rank_view_at_80x24(tmp_path):
    path = session(tmp_path, job_events(world=8, slow_rank=3, steps=80))

    async def run():
        app = TuimonApp(ReplaySource(path, follow=False))
        async with app.run_test(size=(80, 24)) as pilot:
            await redraws(pilot, app, 6)
            strip = app.query_one(RankStrip)
            assert strip.display
            first, second = text_of(strip.content, 40).splitlines()[:2]
            assert first.startswith("8 ranks") and "straggler r3" in first
            assert "r3 " in second or "r0–7" in second  # each rank's own time, or one block each
            await pilot.press("k")
            await redraws(pilot, app, 4)
            assert isinstance(app.screen, RankScreen)
            table = app.screen.query_one("#ranks-table").content
            lines = text_of(table).splitlines()
            assert len(lines) == 9  # the header and one row per rank
            assert max(len(x.rstrip()) for x in lines) <= 78
            assert lines[4].split()[0] == "3" and "+" in lines[4]  # the straggler, how much slower
            head = text_of(app.screen.query_one("#ranks-head").content)
            assert "straggler rank 3:" in head.replace("\n", " ")
            await pilot.press("k")
            assert not isinstance(app.screen, RankScreen)

    asyncio.run(run())


def test_sixty_four_ranks_are_grouped_and_the_straggler_kept_apart(tmp_path):
    path = session(tmp_path, job_events(world=64, slow_rank=37, steps=40))

    async def run():
        app = TuimonApp(ReplaySource(path, follow=False))
        async with app.run_test(size=(80, 24)) as pilot:
            await redraws(pilot, app, 10)
            await pilot.press("k")
            await redraws(pilot, app, 4)
            table = app.screen.query_one("#ranks-table").content
            lines = text_of(table).splitlines()
            labels = [x.split()[0] for x in lines[1:] if x.strip()]
            assert labels[:8] == [f"r{k}–{k + 7}" for k in range(0, 64, 8)]
            assert labels[-1] == "37"  # the straggler has a row of its own under the groups
            assert len(lines) <= 14  # fits under the head at 80x24
            await pilot.press("a")  # every rank
            await redraws(pilot, app, 2)
            table = app.screen.query_one("#ranks-table").content
            assert len(text_of(table)
                       .splitlines()) == 65

    asyncio.run(run())
