"""Each finding carries a price (analysis/why/price.py, worded by report/price_text.py): what it
costs a step (ms and share) or a start (s of compile); graph breaks with the capture's account
(each compiled graph's calls and time, the eager time between them, the break it follows only
where the capture can tell); tuimon try orders its fixes by it. Synthetic rows and captures."""

import dataclasses
from pathlib import Path

from test_why_rules import capture, findings, rows, session

from tuimon import events
from tuimon.analysis import diagnose, summarize, tried
from tuimon.analysis.stats import Collector
from tuimon.analysis.stats.records import Flops
from tuimon.analysis.why.price import Price
from tuimon.report import export, try_text

BREAK = {"where": "model.py:42", "reason": "User-inserted graph break.", "hint": None, "count": 1}
# Two identical pieces a call (a break between repeated blocks): 4 calls of 2 graphs, the module
# called once a step (a recipe's, or a script's counted with its FLOPs).
GRAPHS = {"calls": 4.0, "graphs": 2, "ms": 5.0, "forward_ms": 3.0, "backward_ms": 3.5,
          "by_graph": [{"name": "fabc", "calls": 2.0, "ms": 3.6}, {"name": "fdef", "calls": 2.0, "ms": 1.4}]}
ONCE = Flops(calls=1)


def test_one_break_site_gets_the_whole_eager_time_between_the_graphs():
    comp, eager = rows(graph_breaks=[BREAK], graphs_fwd=2, graphs_bwd=2, flops=ONCE,
                       profiles=[capture(compiled_graphs=GRAPHS)])
    (f,) = findings(session(comp, eager), "graph_breaks")
    assert f.price == "costs 1.50 ms a step (15 %)"  # (4.0 - 3.0) + (4.0 - 3.5) of a 10 ms step
    assert ("a step (capture of steps 11–12): 4 compiled-graph calls, 5.00 ms in them (fabc 2× "
            "3.60 ms, fdef 2× 1.40 ms); 1.50 ms of its forward and backward ran eager between "
            "them") in f.evidence
    assert ("the break at model.py:42 costs 1.50 ms a step, 15 % (the only break: every eager "
            "gap follows it)") in f.evidence


def test_several_break_sites_are_not_split_cannot_tell():
    other = {**BREAK, "where": "model.py:57"}
    comp, eager = rows(graph_breaks=[BREAK, other], graphs_fwd=3, graphs_bwd=3, flops=ONCE,
                       profiles=[capture(compiled_graphs=GRAPHS)])
    (f,) = findings(session(comp, eager), "graph_breaks")
    line = next(x for x in f.evidence if x.startswith("which of the 2 breaks"))
    assert "cannot tell from the capture" in line and "together 1.50 ms a step, 15 %" in line
    assert not any("the break at model.py" in x for x in f.evidence)


def test_without_a_capture_breaks_are_unpriced_and_said_so_by_no_price():
    comp, eager = rows(graph_breaks=[BREAK], graphs_fwd=2, graphs_bwd=2)
    (f,) = findings(session(comp, eager), "graph_breaks")
    assert f.price is None and not any("costs" in x for x in f.evidence)


def test_payoff_costs_a_start_and_the_summary_says_it_beside_the_finding():
    comp, eager = rows(breakeven_steps=500, breakeven_s=6.0, overhead_s=5.2)
    comp.timing = dataclasses.replace(comp.timing, median_ms=9.0)
    s = session(comp, eager)
    (f,) = findings(s, "payoff")
    assert f.price == "costs 5.0 s of compile a start"
    md = export.to_markdown({}, s)
    assert "**pays off after 500 steps; this run had 100** (medium) — costs 5.0 s of compile a start" in md


def test_a_recompiles_start_price_is_its_recompiles_own_compile_time():
    c = Collector()
    c.extend([events.make(events.RUN_QUEUED, "d", mode="default", precision="fp32"),
              events.make(events.RUN_STARTED, "d", mode="default", precision="fp32"),
              events.make(events.COMPILE, "d", compile_id="0/0", forward=True, seconds=3.0),
              events.make(events.RECOMPILE, "d", compile_id="0/1", reasons=["size mismatch"]),
              events.make(events.COMPILE, "d", compile_id="0/1", forward=True, seconds=1.25),
              events.make(events.COMPILE, "d", compile_id="0/1", forward=False, seconds=0.5)])
    (r,) = c.summary().runs
    assert r.compile.recompiles == 1 and r.compile.recompile_s == 1.75
    comp, eager = rows(recompiles=1, compiles=3, recompile_s=1.75, recompile_reasons=["0/1: x"])
    (f,) = findings(session(comp, eager), "recompiles")
    assert f.price == "costs 1.8 s of compile a start"


def test_try_orders_by_price_a_start_spread_over_the_runs_steps():
    """2.0 ms a step (opt) against a 20 s compile over 400 steps (50 ms a step: regional first)."""
    from test_tried import finding
    from test_verdict import session as events_session
    from test_verdict import variant

    s = summarize(events_session(variant("eager", "fp32", 10.0, seed=1),
                                 variant("default", "fp32", 8.0, seed=2, compile_s=20)))
    whys = diagnose(s)
    base = next(w for w in whys if w.run.startswith("default"))
    pay = finding("payoff.later")
    pay.price = Price(start_s=20.0)
    base.findings = [finding("bound.optimizer_bound", 2.0), pay]
    plan = tried.plan(s, whys)
    assert plan.raced[0] == "regional" and plan.candidates[0].price_ms == 20.0 * 1000 / 400
    assert plan.raced[1:] == ["opt", "foreach"]
    lines = try_text.plan_lines(plan, Path("s"))
    assert "(answers payoff.later, costs 20.0 s of compile a start)" in lines[1]
    assert lines[2].endswith("(answers bound.optimizer_bound, costs 2.00 ms a step)")
