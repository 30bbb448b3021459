"""What a raced fix did, in words (analysis/tried.py decides, report/try_text.py words): a cold
compile said cold, and "cannot tell" with its typed reason (the machine's load, the rows' doubts,
too few steps). Synthetic sessions."""

import json

from test_tried import raced
from test_verdict import session, variant

from tuimon import events
from tuimon.analysis import summarize, tried
from tuimon.report import export, try_text

RUNS = ("eager-fp32-fix_none", "default-fp32-fix_none", "default-fp32-fix_dynamic")


def loaded(evs: list[dict], cores: float) -> list[dict]:
    """Other processes using ``cores`` beside every run, all along."""
    for k in range(40):
        evs.append(events.make(events.SAMPLE, system={"foreign_cores": cores},
                               runs={r: {"cpu_percent": 100.0} for r in RUNS}))
        evs[-1]["t"] = 1000.0 + k
    return evs


def test_a_cold_start_is_said_cold():
    evs = raced(regional=(8.0, 5))
    for e in evs:
        if e["type"] == events.RUN_QUEUED and e["mode"] != "eager":
            e["start"] = "cold"
    (o,) = tried.outcomes(summarize(evs))
    assert o.start == "cold" and o.code == tried.START
    assert try_text.outcome_line(o).startswith("regional: cold compile 18.0 s → 4.5 s, step ")
    # Unknown starts (an old session): plain "compile".
    (o,) = tried.outcomes(summarize(raced(regional=(8.0, 5))))
    assert o.start is None and try_text.outcome_line(o).startswith("regional: compile 18.0 s")


def test_cannot_tell_for_load_says_the_machine_was_busy():
    s = summarize(loaded(raced(processes=1, dynamic=(6.0, 20)), 1.5))
    (o,) = tried.outcomes(s)
    assert o.code == tried.CANNOT_TELL and [r.code for r in o.unsure] == [tried.LOAD]
    line = try_text.outcome_line(o)
    assert line.endswith("— cannot tell: the machine was busy (other processes used ~1.5 cores "
                         "while the steps ran)"), line
    (said,) = json.loads(export.to_json({}, s))["tried"]  # as summary.json keeps every point
    assert said["unsure"][0]["code"] == "load" and said["unsure"][0]["busy"]["code"] == "busy"


def test_cannot_tell_for_doubts_names_the_row_and_its_doubt_not_the_load():
    """The fixed variant recompiled in its steady state: a doubt of its own, on a quiet machine."""
    evs = raced(processes=1)
    evs += variant("default", "fp32", 6.0, seed=9, compile_s=20, axes={"fix": "dynamic"},
                   processes=1, compile_at=(100, 200, 300))
    s = summarize(session(*[[e] for e in evs if e["type"] != events.SESSION_STARTED],
                          axes={"fix": ["none", "dynamic"]}))
    (o,) = tried.outcomes(s)
    assert o.code == tried.CANNOT_TELL and [r.code for r in o.unsure] == [tried.DOUBTS]
    assert o.unsure[0].get("label") == "default/fp32 · fix=dynamic"
    assert try_text.outcome_line(o).endswith(
        "— cannot tell: default/fp32 · fix=dynamic: recompiles after warm-up")


def test_cannot_tell_for_too_few_steps_says_how_many():
    evs = raced(processes=1)
    evs += variant("default", "fp32", 6.0, seed=9, compile_s=20, axes={"fix": "dynamic"},
                   processes=1, n_steps=12)
    s = summarize(session(*[[e] for e in evs if e["type"] != events.SESSION_STARTED],
                          axes={"fix": ["none", "dynamic"]}))
    (o,) = tried.outcomes(s)
    assert o.code == tried.CANNOT_TELL and [r.code for r in o.unsure] == [tried.FEW]
    steps = o.unsure[0].get("steps")
    assert 0 < steps < 12
    assert try_text.outcome_line(o).endswith(
        f"— cannot tell: too few steady steps to compare ({steps} of 20)")


def test_a_quiet_session_tells_and_says_no_reason():
    (o,) = tried.outcomes(summarize(raced(processes=3, dynamic=(6.0, 20))))
    assert o.code == tried.HELPED and o.unsure == ()


def test_the_tried_section_ends_before_the_sessions_own_list():
    """A rule after it: in Markdown the session's list would otherwise join the fixes' list."""
    md = export.to_markdown({"name": "s", "recipe": "r.py"}, summarize(raced(regional=(8.0, 5))))
    tried_at, rule, recipe = md.index("## Tried"), md.index("\n---\n"), md.index("- recipe: `r.py`")
    assert tried_at < rule < recipe
