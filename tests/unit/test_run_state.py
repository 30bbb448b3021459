"""The one reducer (sessiondir/run_state.py) on synthetic event streams: a run's life, its
pauses and turns, rounds, failures, a hang, and a torchrun job's ranks and joined steps."""

from __future__ import annotations

from test_rank_stats import job_events

from tuimon import events
from tuimon.sessiondir.run_state import SessionState


def ev(kind: str, t: float, run: str | None = "r", **fields) -> dict:
    return {"type": kind, "t": t, **({"run": run} if run else {}), **fields}


def step(i: int, t: float, phase: str = "steady", run: str = "r", **fields) -> dict:
    return ev(events.STEP, t, run, i=i, ms=10.0, n=8, loss=1.0 / (i + 1), phase=phase, **fields)


def fold(evs: list[dict], state: SessionState | None = None) -> tuple[SessionState, list[dict]]:
    state = state or SessionState()
    steps = [s for e in evs for s in state.add(e)]
    return state, steps


def test_a_runs_life_its_compile_pauses_and_turns():
    state, steps = fold([
        ev(events.RUN_QUEUED, 1.0, mode="default", precision="fp32", axes={"width": 512}),
        ev(events.PHASE, 2.0, phase="building"),
        ev(events.RUN_STARTED, 3.0, device="cpu", notes=["a note"], steps=9),
        ev(events.PHASE, 3.5, phase="compiling", compile_id="0/0"),
        ev(events.COMPILE_PHASE, 4.0, phase="inductor codegen", compile_id="0/0", backward=True)])
    r = state.runs["r"]
    assert (r.mode, r.precision, r.axes, r.notes) == ("default", "fp32", {"width": "512"}, ["a note"])
    assert r.status == "running" and r.state == "compiling" and r.compiling and r.started_t == 2.0
    assert (r.compile_id, r.compile_phase, r.compile_backward, r.compile_since) == (
        "0/0", "inductor codegen", True, 3.5)
    fold([step(0, 5.0, "warmup"), ev(events.PHASE, 5.0, phase="warmup"), step(1, 6.0, "warmup"),
          step(2, 7.0)], state)
    assert r.state == "steady" and not r.compiling and r.compile_id is None  # a step says its phase
    assert (r.steps, r.last_t) == (3, 7.0)
    fold([ev(events.PHASE, 8.0, phase="paused"), step(3, 8.5)], state)  # a step sent late
    assert r.state == "paused"
    fold([ev(events.PHASE, 9.0, phase="steady"), ev(events.PHASE, 10.0, phase="paused", turn=True)],
         state)
    assert r.state == "waiting turn" and r.turns == 1 and r.pauses == [[8.0, 9.0], [10.0, None]]
    fold([ev(events.PHASE, 12.0, phase="steady"), step(4, 13.0)], state)
    assert r.state == "steady" and r.pauses[-1] == [10.0, 12.0] and r.active
    assert steps == [] and fold([step(5, 14.0)], state)[1][0]["i"] == 5  # a step completes itself


def test_a_hang_its_stop_and_the_warnings_said_once():
    state, _ = fold([ev(events.RUN_QUEUED, 0.0, mode="eager", precision="fp32"),
                     ev(events.RUN_STARTED, 1.0), step(0, 2.0),
                     ev(events.WARNING, 30.0, hung=True, text="no step for 28 s"),
                     ev(events.WARNING, 31.0, text="no step for 28 s"),
                     ev(events.WARNING, 31.0, run=None, text="host memory low"),
                     ev(events.PROFILE, 32.0, state="started", capture=1)])
    r = state.runs["r"]
    assert r.hung == 30.0 and r.warnings == ["no step for 28 s"] and r.profiling
    assert state.warnings == ["host memory low"]
    fold([step(1, 20.0)], state)  # sent at the stop, ended before the warning: still hung
    assert r.hung == 30.0
    fold([ev(events.PROFILE, 33.0, state="done", capture=1, step_ms=9.0),
          ev(events.FINISHED, 40.0, reason="stopped"), ev(events.RUN_EXITED, 41.0, seconds=40.0)], state)
    assert not r.profiling and r.profiles == [{"t": 33.0, "state": "done", "capture": 1, "step_ms": 9.0}]
    assert (r.status, r.state, r.hung_s, r.ended_t, r.wall_s) == ("stopped", "stopped", 20.0, 40.0, 40.0)
    assert r.ended and not r.active


def test_rounds_and_a_round_stopped_before_it_started():
    state, _ = fold([ev(events.RUN_QUEUED, 0.0, "eager-fp32-2", mode="eager", precision="fp32",
                        replicate=2, repeats=3),
                     ev(events.FINISHED, 1.0, "eager-fp32-2", reason="stopped")])
    r = state.runs["eager-fp32-2"]
    assert (r.replicate, r.repeats, r.status, r.state) == (2, 3, "not run", "stopped")
    assert r.ended and not r.stepped


def test_failures_in_one_line_and_a_finish_after_a_failure_keeps_it_failed():
    state, _ = fold([ev(events.RUN_STARTED, 0.0, "a"),
                     ev(events.FAILED, 1.0, "a", stage="step", error="RuntimeError", message="boom"),
                     ev(events.RUN_STARTED, 0.0, "b"),
                     ev(events.FAILED, 1.0, "b", error="E", message="m", what="rank 1: E: m"),
                     ev(events.FINISHED, 2.0, "b", reason="steps")])
    a, b = state.runs["a"], state.runs["b"]
    assert (a.status, a.error, a.failure["stage"]) == ("failed", "RuntimeError: boom", "step")
    assert (b.status, b.state, b.error, b.reason) == ("failed", "failed", "rank 1: E: m", "steps")


def test_a_jobs_ranks_and_its_steps_joined_from_theirs():
    joined = []
    state = SessionState(joined=lambda steps, job: joined.append((sorted(steps), job["i"])))
    run = "eager-script"
    evs = job_events(world=3, steps=5, slow_rank=2)
    _, steps = fold(evs[:-4], state)  # every step in; no rank ended yet
    r = state.runs[run]
    assert sorted(r.ranks) == [0, 1, 2] and r.world_size == 3 and r.status == "running"
    assert r.started["rank"] == 0 and r.state == "steady" and r.steps == 5
    assert [s["i"] for s in steps] == [0, 1, 2, 3, 4] and joined[0] == ([0, 1, 2], 0)
    first = steps[0]
    assert first["n"] == 96 and first["slowest"] in (0, 1, 2) and first["phase"] == "warmup"
    assert abs(first["loss"] - (1.0 + 0.01)) < 1e-9  # the mean of the ranks' losses
    rank = r.ranks[1]
    assert (rank.steps, rank.last_i, rank.state, rank.started["host"]) == (5, 4, "steady", "node0")
    # Rank 2 is held up: its steps wait; a catch-up marks a step; rank 1 is torn down.
    more = [step(5, 2.0, run=run, rank=k, pre_ms=1.0) for k in (0, 1)]
    _, steps = fold([*more, ev(events.CONTROL, 2.1, run, action="catch_up", first=5, last=6)], state)
    assert steps == []  # rank 2 has not sent step 5
    _, steps = fold([ev(events.RUN_EXITED, 2.2, run, rank=2, said=False)], state)
    assert [s["i"] for s in steps] == [5] and steps[0]["gap"] == 1 and r.ranks[2].state == "killed"
    _, steps = fold([ev(events.PHASE, 2.3, run, rank=0, phase="compiling", compile_id="1/0")], state)
    assert r.compiling and r.compile_id == "1/0" and r.state == "compiling"
    fold([ev(events.FAILED, 2.4, run, rank=1, error="E", message="m")], state)
    assert r.state == "failed" and r.error == "rank 1: E: m" and r.status == "running"
    assert r.ranks[1].error == "E: m" and not r.ranks[1].active
    fold([ev(events.FINISHED, 3.0, run, rank=0, reason="steps")], state)
    assert not r.compiling and r.ranks[0].ended and r.ranks[0].state == "done"
    fold([ev(events.FAILED, 4.0, run, what="rank 1: E: m", stage="step")], state)
    assert r.status == "failed" and r.failure["stage"] == "step"


def test_the_session_end_joins_what_its_ranks_sent():
    run = "eager-script"
    state, steps = fold(job_events(world=2, steps=3)[:-3])  # no goodbyes
    assert [s["i"] for s in steps] == [0, 1, 2]
    _, steps = fold([step(3, 1.0, run=run, rank=0)], state)
    assert steps == []  # rank 1's step 3 never comes
    _, steps = fold([ev(events.SESSION_ENDED, 5.0, None, status="interrupted")], state)
    assert [s["i"] for s in steps] == [3] and state.runs[run].steps == 4
    assert state.ended == "interrupted"


def test_a_reader_extends_the_run_record_with_what_it_adds():
    from dataclasses import dataclass

    from tuimon.sessiondir.run_state import RunState

    @dataclass(eq=False)
    class Mine(RunState):
        seen: int = 0

    state, _ = fold([ev(events.RUN_QUEUED, 0.0, mode="eager", precision="fp32")], SessionState(Mine))
    assert isinstance(state.runs["r"], Mine)
