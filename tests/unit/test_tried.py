"""tuimon try, decided and worded (analysis/tried.py, report/try_text.py), on synthetic sessions:
which fixes a session's findings call for, and what each raced fix did against its variant
without it."""

import json
from pathlib import Path

import pytest
from test_verdict import session, variant

from tuimon import events
from tuimon.analysis import diagnose, summarize, tried
from tuimon.analysis.stats.point import point
from tuimon.analysis.why import Finding, VariantWhy
from tuimon.report import export, try_text
from tuimon.variants import product

FIX = {"fix": ["none", "regional", "dynamic", "scalars"]}


def raced(processes=3, **steps_ms):
    """eager at fix=none (10 ms), default at fix=none (8 ms, 20 s compile) and each fix given."""
    runs = [variant("eager", "fp32", 10.0, seed=1, axes={"fix": "none"}, processes=processes),
            variant("default", "fp32", 8.0, seed=2, compile_s=20, axes={"fix": "none"},
                    processes=processes)]
    for k, (fix, (ms, compile_s)) in enumerate(steps_ms.items()):
        runs.append(variant("default", "fp32", ms, seed=3 + k, compile_s=compile_s, axes={"fix": fix},
                            processes=processes))
    return session(*runs, axes={"fix": ["none", *steps_ms]})


def test_eager_runs_once_and_every_fix_is_compared_with_the_variant_without_it():
    labels = [v.label for v in product(["eager", "default"], ["fp32"], FIX)]
    assert labels == ["eager/fp32 · fix=none", "default/fp32 · fix=none", "default/fp32 · fix=regional",
                      "default/fp32 · fix=dynamic", "default/fp32 · fix=scalars"]
    s = summarize(raced(regional=(8.0, 5), dynamic=(6.0, 20), scalars=(8.3, 20)))
    found = {o.fix: o for o in tried.outcomes(s)}
    assert set(found) == {"regional", "dynamic", "scalars"}
    assert found["dynamic"].code == tried.HELPED
    assert found["dynamic"].speedup == pytest.approx(8 / 6, rel=0.03)
    assert found["regional"].code == tried.START  # the same step, a quarter of the compile
    assert found["regional"].compile_s < found["regional"].base_compile_s / 3
    assert found["scalars"].code in (tried.NO_BETTER, tried.WORSE)
    # Its break-even is against eager without the fix: the fixed row's own eager run is absent.
    rows = {r.label: r for r in s.variants or s.runs}
    assert rows["default/fp32 · fix=regional"].compare.baseline == "eager/fp32 · fix=none"
    assert found["regional"].breakeven_s < found["regional"].base_breakeven_s
    assert tried.winners(list(found.values())) == ["dynamic"]


def test_a_fix_the_child_could_not_apply_and_a_failed_one_are_said_so():
    evs = raced(regional=(8.0, 20), dynamic=(8.0, 20))
    said = []
    for e in evs:
        if e["type"] == events.RUN_STARTED and e["run"].startswith("default-fp32-fix_regional"):
            e["fixes"] = ["regional"]  # the runner's note on it (runner/fixes.py)
            said.append(events.make(events.WARNING, e["run"], note=True, fix="regional",
                                    applied=False, text="fix regional: no repeated block"))
        if e["type"] == events.FINISHED and e["run"].startswith("default-fp32-fix_dynamic"):
            e.update(type=events.FAILED, error="TorchRuntimeError", message="boom")
    found = {o.fix: o for o in tried.outcomes(summarize(evs + said))}
    assert found["regional"].code == tried.NOT_APPLIED
    assert try_text.outcome_line(found["regional"]) == "regional: could not be applied: no repeated block"
    assert found["dynamic"].code == tried.FAILED


def test_the_answer_names_each_fix_with_its_figures_and_the_lines_that_keep_the_winner(tmp_path):
    s = summarize(raced(regional=(8.0, 5), dynamic=(6.0, 20)))
    found = tried.outcomes(s)
    lines = try_text.answer_lines(found, [tmp_path])
    assert lines[1].startswith("  dynamic: compile 18.0 s → 18.0 s, step 1.33× faster (95 % CI ")
    assert lines[1].endswith("— faster") and "pays off after" in lines[1]
    assert any(line.startswith("  regional: compile 18.0 s → 4.5 s") for line in lines)
    assert "to keep dynamic, write (docs/try.md):" in lines
    assert "    model = torch.compile(model, dynamic=True)" in lines
    md = export.to_markdown({}, s)
    assert "## Tried (tuimon try)" in md and md.index("## Tried") < md.index("| ")
    doc = json.loads(export.to_json({}, s))
    assert {t["fix"]: t["code"] for t in doc["tried"]} == {"regional": "helped_start", "dynamic": "helped"}


def test_a_busy_session_cannot_tell():
    evs = raced(processes=1, dynamic=(6.0, 20))
    runs = ("eager-fp32-fix_none", "default-fp32-fix_none", "default-fp32-fix_dynamic")
    for k in range(40):
        evs.append(events.make(events.SAMPLE, system={"foreign_cores": 1.5},
                               runs={r: {"cpu_percent": 100.0} for r in runs}))
        evs[-1]["t"] = 1000.0 + k
    s = summarize(evs)
    assert s.busy and [o.code for o in tried.outcomes(s)] == [tried.CANNOT_TELL]


def finding(code: str, cost_ms=None) -> Finding:
    return Finding(code.split(".")[0], point(code), [], [], cost_ms=cost_ms)


def test_the_plan_follows_the_findings_prices_them_and_says_what_cannot_apply():
    s = summarize(session(variant("eager", "fp32", 10.0, seed=1),
                          variant("default", "fp32", 8.0, seed=2, compile_s=20)))
    whys = diagnose(s)
    base = next(w for w in whys if w.run.startswith("default"))
    base.findings = [finding("recompiles.count", 0.5), finding("bound.optimizer_bound", 2.0),
                     finding("cudagraphs.skipped")]
    plan = tried.plan(s, whys)
    assert plan.base.label == "default/fp32"
    assert plan.raced == ["opt", "foreach", "dynamic"]  # the costliest finding's fixes first
    assert [(c.fix, c.cannot) for c in plan.candidates if c.cannot] == [("no-cudagraphs", "CUDA only")]
    assert plan.axis_values() == ["none", "opt", "foreach", "dynamic"]
    lines = try_text.plan_lines(plan, Path("s"))
    assert lines[0].startswith("try: s: fixes on default/fp32 (1.25× faster against eager)")
    assert ("  opt: the optimizer's step compiled (+opt) (answers bound.optimizer_bound, costs "
            "2.00 ms a step)") in lines
    assert lines[-1] == "  cannot try here: no-cudagraphs (CUDA only)"
    only = tried.plan(s, whys, only=["regional"])
    assert only.raced == ["regional"] and only.candidates[0].answers == ()
    nothing = tried.plan(s, [])
    assert nothing.raced == []
    assert try_text.plan_lines(nothing, Path("s"))[-1].startswith("try: nothing to race")


def test_the_eager_runs_input_bound_step_calls_for_the_loader_on_the_compiled_base():
    """vae (pytorch/examples) under `tuimon run --try`: eager waited 20 % of its step on the
    DataLoader, the compiled variant 23 ms of a slower step (14 %, under Why's 15 %): the same
    loader feeds both, so the loader is raced; eager's other findings are its own."""
    s = summarize(session(variant("eager", "fp32", 10.0, seed=1),
                          variant("default", "fp32", 8.0, seed=2, compile_s=20)))
    base = next(w for w in diagnose(s) if w.run.startswith("default"))
    base.findings = []
    eager = next(r for r in s.variants or s.runs if r.label == "eager/fp32")
    whys = [VariantWhy(eager.run, eager.label, False, [finding("bound.input", 2.5),
                                                      finding("bound.compute")], compiled=False), base]
    plan = tried.plan(s, whys, is_script=True)
    assert plan.raced == ["loader"]  # not amp: compute-bound is eager's own step
    (c,) = plan.candidates
    assert c.seen_in == "eager/fp32" and c.answers == ("bound.input",)
    lines = try_text.plan_lines(plan, Path("s"))
    assert ("  loader: more DataLoader workers (sized to the cores; pinned memory on CUDA) "
            "(answers bound.input in eager/fp32, costs 2.50 ms a step)") in lines
    base.findings = [finding("bound.input", 1.5)]  # the base's own finding: its price, its words
    (c,) = tried.plan(s, whys, is_script=True).candidates
    assert (c.fix, c.seen_in, c.price_ms) == ("loader", None, 1.5)
    assert tried.plan(s, whys).raced == []  # a recipe's batches are in memory: no loader


def test_a_fix_added_beside_a_session_without_the_axis_is_compared_with_the_variant_as_it_ran():
    """The TUI's t adds `default/fp32 · fix=dynamic` to a session whose runs have no fix axis:
    no axis is fix=none."""
    s = summarize(session(variant("eager", "fp32", 10.0, seed=1),
                          variant("default", "fp32", 8.0, seed=2, compile_s=20),
                          variant("default", "fp32", 6.0, seed=3, compile_s=20, axes={"fix": "dynamic"})))
    rows = {r.label: r for r in s.variants}
    fixed = rows["default/fp32 · fix=dynamic"]
    assert fixed.compare.axis_baseline == "default/fp32" and fixed.compare.baseline == "eager/fp32"
    (o,) = tried.outcomes(s)
    assert o.fix == "dynamic" and o.code == tried.HELPED
    assert o.base_compile_s == pytest.approx(o.compile_s, rel=0.01)
    # ... and the verdict weighs it against the eager run as it ran (no axis is fix=none too).
    assert s.verdict.reference == "eager/fp32" and s.verdict.kind == "use"
    assert s.verdict.winner == "default/fp32 · fix=dynamic"


def test_the_tuis_t_picks_the_first_fix_that_applies_and_says_why_the_others_do_not():
    pick = tried.pick(["no-cudagraphs", "dynamic"], on_cuda=False, is_script=False, compiled=True)
    assert (pick.fix, pick.value, pick.passed) == ("dynamic", "dynamic", (("no-cudagraphs", "CUDA only"),))
    assert try_text.fix_hint(pick) == "t → dynamic: dynamic shapes (torch.compile(dynamic=True))"
    # A variant that has a fix already keeps it; one it has is passed over.
    again = tried.pick(["dynamic", "regional"], ("dynamic",), on_cuda=False, is_script=False, compiled=True)
    assert (again.fix, again.value) == ("regional", "dynamic+regional")
    none = tried.pick(["dynamic"], ("dynamic",), on_cuda=False, is_script=False, compiled=True)
    assert none.fix is None
    assert try_text.fix_hint(none) == "no fix to try here: dynamic (this variant has it already)"
    eager = tried.pick(["opt", "foreach"], on_cuda=False, is_script=True, compiled=False)
    assert eager.fix == "foreach" and eager.passed == (("opt", "a compiled variant's only"),)
    nothing = tried.pick([], on_cuda=False, is_script=False, compiled=True)
    assert try_text.fix_hint(nothing) is None
    assert try_text.no_fix_line(nothing, "default/fp32").startswith("t: this finding calls for no fix")
    cuda = tried.pick(["tf32"], on_cuda=False, is_script=False, compiled=True)
    assert try_text.no_fix_line(cuda, "default/fp32") == ("t: no fix of this finding can be tried on "
                                                         "default/fp32: tf32 (CUDA only)")
    assert tried.suggests(finding("recompiles.title")) == ["dynamic"]


def test_a_fix_still_running_without_a_compared_step_is_pending_not_a_verdict():
    evs = session(variant("eager", "fp32", 10.0, seed=1),
                  variant("default", "fp32", 8.0, seed=2, compile_s=20),
                  variant("default", "fp32", 6.0, seed=3, compile_s=20, axes={"fix": "dynamic"}, n_steps=2))
    evs = [e for e in evs if not (e["type"] == events.FINISHED and "fix_dynamic" in e["run"])]
    (o,) = tried.outcomes(summarize(evs))
    assert o.code == tried.PENDING
    assert try_text.outcome_line(o) == "dynamic: under way, no step compared with the variant without it yet"


def test_a_fix_that_makes_compile_pay_off_where_it_never_did_says_so():
    s = summarize(session(
        variant("eager", "fp32", 8.0, seed=1, axes={"fix": "none"}),
        variant("default", "fp32", 9.0, seed=2, compile_s=20, axes={"fix": "none"}),
        variant("default", "fp32", 6.0, seed=3, compile_s=20, axes={"fix": "regional"}),
        axes={"fix": ["none", "regional"]}))
    (o,) = tried.outcomes(s)
    assert o.base_breakeven_never and o.breakeven_s is not None
    assert "pays off after" in try_text.outcome_line(o) and "(without it: never)" in try_text.outcome_line(o)


def test_one_process_a_variant_tells_only_what_the_session_can():
    """With one process a variant the spread between processes is assumed: an interval that
    leaves 1.00× out for a speedup smaller than the session can tell is not a verdict (a quiet
    VM gave dynamic and scalars "1.35× faster" on a static MLP against one slow base process);
    a speedup beyond it is, and with processes measured the interval speaks alone."""
    s = summarize(raced(processes=1, dynamic=(6.0, 20), scalars=(3.0, 20)))
    tells = s.plan["detectable_pct"]
    assert 8 / 6 - 1 < tells / 100 < 8 / 3 - 1
    found = {o.fix: o for o in tried.outcomes(s)}
    assert found["dynamic"].speedup_lo > 1.0 and found["dynamic"].code == tried.CANNOT_TELL
    assert [p.code for p in found["dynamic"].unsure] == [tried.ONE]
    assert try_text.unsure_text(found["dynamic"].unsure) == (
        f"one process a variant: the spread between processes is assumed (±{round(s.noise.pct)} %), "
        f"and this session tells a speedup of ±{round(tells)} % or more (--repeats 3 measures it)")
    assert found["scalars"].code == tried.HELPED
    three = {o.fix: o for o in tried.outcomes(summarize(raced(dynamic=(6.0, 20))))}
    assert three["dynamic"].code == tried.HELPED
