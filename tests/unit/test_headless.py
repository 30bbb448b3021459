"""The headless lines a run's events become (headless.HeadlessView), fed events directly: what
a script does not say up front, graph-less compiles, the automatic capture nobody asked for."""

from __future__ import annotations

import io

from rich.console import Console

from tuimon import events
from tuimon.headless import HeadlessView


def lines(*evs: dict) -> list[str]:
    out = io.StringIO()
    view = HeadlessView({"r": "default/script"}, None, Console(file=out, width=400, force_terminal=False))
    view([events.make(e.pop("type"), "r", **e) for e in evs])
    return out.getvalue().splitlines()


def test_a_script_says_no_params_or_batch_it_does_not_know():
    """A script's model and batch are unknown when it starts: '0.0M params, batch None' was
    printed for every script run."""
    said = lines({"type": events.RUN_STARTED, "device": "cpu", "device_name": "AMD EPYC, 2 cores",
                  "params": None, "batch_size": None})
    assert said == ["default/script: started on cpu (AMD EPYC, 2 cores)"]
    said = lines({"type": events.RUN_STARTED, "device": "cpu", "device_name": "x86", "params": 1_234_567,
                  "batch_size": 32, "rank": 1, "local_rank": 0, "world_size": 2, "backend": "gloo"})
    assert said == ["default/script: started on cpu (x86), 1.2M params, batch 32, rank 1 of 2 (gloo)"]


def test_a_frame_without_a_graph_has_no_cache():
    """Dynamo traced a frame that holds no graph (a graph break at its top): nothing reached
    Inductor, so there is no cache to name ('(none cache)' before)."""
    base = {"type": events.COMPILE, "forward": True, "seconds": 0.56,
            "phases": {"dynamo": 0.56, "aot": 0.0, "inductor": 0.0, "codegen": 0.0}}
    said = lines({**base, "compile_id": "0/0", "frame": "forward", "graph_ops": 0, "cache": "none"},
                 {**base, "compile_id": "1/0", "frame": "f", "graph_ops": 2, "cache": "cold"},
                 {**base, "compile_id": "1/0", "forward": False, "graph_ops": None, "cache": "none"})
    assert said == ["default/script: compiled 0/0 forward() in 560 ms, mostly dynamo 560 ms (no graph)",
                    "default/script: compiled 1/0 f() in 560 ms, mostly dynamo 560 ms (cold cache)",
                    "default/script: compiled 1/0 backward in 560 ms, mostly dynamo 560 ms"]


def test_the_automatic_capture_fails_quietly():
    """Nobody asked for the automatic capture: one that recorded nothing is no 'profile 1
    failed' line; a capture the user asked for still says so."""
    failed = {"type": events.PROFILE, "state": "failed", "capture": 1,
              "error": "the window ended before any active step was recorded (1 of 3 window steps ran)"}
    assert lines({**failed, "source": "auto", "quiet": True}) == []
    assert lines({**failed, "source": "control"}) == [
        "default/script: profile 1 failed: the window ended before any active step was recorded "
        "(1 of 3 window steps ran)"]
    # In summary.md's notes it is a note, in other words than a failure.
    from tuimon.analysis import RunStats
    from tuimon.report.table import profile_note

    r = RunStats(run="r", mode="default", precision="script")
    assert profile_note(r, {**failed, "quiet": True}) == (
        "default/script: the automatic capture 1 recorded nothing: the window ended before any "
        "active step was recorded (1 of 3 window steps ran)")
    from tuimon.report.table import profiles_text

    r.profiles = [{**failed, "quiet": True}]
    assert profiles_text(r) == "0 captures"


def test_until_known_says_how_far_the_answer_is_and_why_it_stopped():
    out = io.StringIO()
    view = HeadlessView({"r": "default/script"}, None, Console(file=out, width=400, force_terminal=False))
    base = {"round": 2, "rounds": 1, "margin": 0.03, "max_rounds": 12, "about": "default/script"}
    view([events.make(events.KNOWN, action="progress", known={**base, "code": "settling", "left": 7,
                                                              "eta_s": 41.0}),
          events.make(events.KNOWN, action="progress", known={**base, "code": "settling", "left": 6,
                                                              "eta_s": 40.0}),
          events.make(events.KNOWN, action="end", known={**base, "code": "faster", "rounds": 3,
                                                         "stopped": "known", "stepped_s": 95.0})])
    said = out.getvalue().splitlines()
    assert said == ["until known: round 2 of at most 12 · default/script settling (7 steps without a "
                    "compile to go) · ~40 s to a verdict within ±3 %",
                    "Stopped after 3 rounds (95.0 s of stepping): the answer was known — "
                    "default/script is faster."]
