"""The diagnosis rules on synthetic sessions (no torch, no GPU): each rule family fires on the
evidence it reads and says what to try; the runner's side of it (the CUDA graph log listener,
compiled-graph and device-busy time in a capture, when the automatic capture opens)."""

from __future__ import annotations

import dataclasses
import json
import logging

from said import top_lines, worded

from tuimon import events
from tuimon.analysis.stats import RunStats, SessionSummary
from tuimon.analysis.stats.records import GROUPS, Compiles, Flops, Timing
from tuimon.analysis.why import diagnose
from tuimon.analysis.why.finding import HIGH, INFO, MEDIUM
from tuimon.report.export import to_json, to_markdown
from tuimon.runner.profiling import Ev, Options, analyse, link, nest
from tuimon.runner.profiling.profiler import AUTO, AUTO_FROM, AUTO_SETTLE, AUTO_TRIES, Profiler
from tuimon.runner.torch_hints import HintListener, classify

MiB = 2 ** 20


def capture(**fields) -> dict:
    base = {"state": "done", "capture": 1, "source": "auto", "steps_recorded": 2, "active_steps": [11, 12],
            "partial": False, "compiles": 0, "step_ms": 10.0, "top_ops": [], "syncs": [],
            "split": {"data_ms": 0.1, "forward_ms": 4.0, "backward_ms": 4.0, "optimizer_ms": 1.0,
                      "step_ms": 10.0}}
    return {**base, **fields}


def session(compiled: RunStats, eager: RunStats | None = None) -> SessionSummary:
    runs = [r for r in (eager, compiled) if r is not None]
    for r in runs:
        r.status = "done"
    if eager is not None:
        speedup = eager.timing.median_ms / compiled.timing.median_ms
        compiled.compare = dataclasses.replace(
            compiled.compare, baseline=eager.label, speedup=speedup, speedup_lo=speedup * 0.9,
            speedup_hi=speedup * 1.1, within_noise=speedup * 0.9 <= 1 <= speedup * 1.1)
    return SessionSummary(runs)


def rows(device: str = "cpu", mode: str = "default", **fields) -> tuple[RunStats, RunStats]:
    """``fields``: the compiled row's, by name, each set in the record that holds it."""
    eager = RunStats("eager-fp32", "eager", "fp32", device=device, timing=Timing(median_ms=10.0, steps=100))
    comp = RunStats(f"{mode}-fp32", mode, "fp32", device=device, timing=Timing(median_ms=10.0, steps=100),
                    compile=Compiles(compile_s=5.0))
    held = {f.name: group for group, kind in GROUPS.items() for f in dataclasses.fields(kind)}
    for group in {held[key] for key in fields if key in held}:  # records are frozen
        setattr(comp, group, dataclasses.replace(getattr(comp, group), **{
            key: value for key, value in fields.items() if held.get(key) == group}))
    for key, value in fields.items():
        if key not in held:
            setattr(comp, key, value)
    return comp, eager


def findings(summary: SessionSummary, rule: str | None = None):
    """The compiled variant's findings, in report/why_text.py's words."""
    (v,) = [v for v in worded(summary) if v.compiled]  # an eager row may have its own entry
    return [f for f in v.findings if rule is None or f.rule == rule]


def text(f) -> str:
    return " ".join([f.title, *f.evidence, *f.advice])


def test_graph_breaks_with_the_graphs_per_step_and_the_time_outside_them():
    comp, eager = rows(graph_breaks=[{"where": "model.py:39", "reason": "User-inserted graph break.",
                                      "hint": "Remove the `torch._dynamo.graph_break()` call.", "count": 1}],
                       graphs_fwd=2, graphs_bwd=2,
                       profiles=[capture(compiled_graphs={"calls": 4.0, "graphs": 4, "ms": 0.5,
                                                          "forward_ms": 3.0, "backward_ms": 3.5})])
    (f,) = findings(session(comp, eager), "graph_breaks")
    assert f.title == ("graph breaks at 1 place: each step runs 4 compiled graphs (forward and backward in "
                       "pieces) instead of 2")
    assert "break at model.py:39 (×1): User-inserted graph break." in f.evidence
    outside = "1.50 ms a step (15%) of forward and backward ran outside"
    assert any(line.startswith(outside) for line in f.evidence)
    assert f.advice[0] == "model.py:39: Remove the `torch._dynamo.graph_break()` call."
    assert f.severity == HIGH and f.cost_ms == 1.5


def _breaks(calls: float, graphs: int, bwd: int = 2, module_calls: int | None = 1):
    comp, eager = rows(graph_breaks=[{"where": "m.py:9", "reason": "User-inserted graph break.", "count": 1}],
                       graphs_fwd=2, graphs_bwd=bwd, flops=Flops(calls=module_calls),
                       profiles=[capture(compiled_graphs={"calls": calls, "graphs": graphs, "ms": 0.5,
                                                          "forward_ms": 3.0, "backward_ms": 3.5})])
    (f,) = findings(session(comp, eager), "graph_breaks")
    return f


def test_the_graphs_a_step_runs_are_said_against_a_whole_calls_never_2_instead_of_2():
    """Issue 40.5: "each step runs 2 compiled graphs (forward and backward) instead of 2"."""
    f = _breaks(2.0, 2)
    assert "instead of" not in f.title and f.severity == MEDIUM and f.cost_ms is None
    assert f.title == ("graph breaks at 1 place, none in the step's graphs: each step runs 2 compiled "
                       "graphs, no more than one whole call of the module (2: forward and backward); "
                       "what the breaks split off runs eager, or outside the steps")
    assert not any("the only break" in line for line in f.evidence)  # its eager gaps are no break's
    assert _breaks(3.0, 3, bwd=0).title == ("graph breaks at 1 place: each step runs 3 compiled graphs "
                                             "(forward in pieces) instead of 1")


def test_a_loop_calling_the_module_each_token_is_not_graph_breaks():
    """Issue 40.5: 18 graph calls a step were a per-token loop calling the module 9 times (the
    script's hooks count its calls a step), each call whole: said as the script's loop; a loop of
    broken calls says both; uncounted calls whose graphs repeat say either, not breaks."""
    f = _breaks(18.0, 2, module_calls=9)
    assert f.title == ("graph breaks at 1 place, none in the step's graphs: its 18 compiled-graph calls a "
                       "step are the script calling the module ~9 times a step (a loop in Python), each "
                       "call 2 compiled graphs, no more than one whole call of the module (2: forward and "
                       "backward)")
    assert f.cost_ms is None and f.severity == MEDIUM
    assert _breaks(36.0, 4, module_calls=9).title == (
        "graph breaks at 1 place: each of the module's ~9 calls a step runs 4 compiled graphs (forward and "
        "backward in pieces) instead of 2, 36 a step")
    unknown = _breaks(18.0, 2, module_calls=None)
    assert unknown.title.startswith("graph breaks at 1 place: each step runs 18 compiled-graph calls of 2 "
                                    "distinct graphs, each ~9 times: the script calling the module ~9 times "
                                    "a step (a loop in Python), or breaks between identical pieces")
    assert unknown.cost_ms is None
    assert _breaks(4.0, 4, module_calls=None).title.startswith("graph breaks at 1 place: each step runs 4 "
                                                               "compiled graphs (forward and backward in")


def test_recompiles_name_the_guard_and_the_recompile_limit():
    reason = ("1/0: tensor 'x' size mismatch at index 0. expected 8, actual 12  # return self.net(x)"
              "  # recipes/shapes.py:12 in forward")
    comp, eager = rows(recompiles=1, compiles=3, recompile_reasons=[reason])
    (f,) = findings(session(comp, eager), "recompiles")
    assert f.title == "1 recompile: input shapes changed" and f.severity == MEDIUM
    guard = "guard failed: tensor 'x' size mismatch at index 0. expected 8, actual 12 (shapes.py:12)"
    assert guard in f.evidence
    assert any("mark_dynamic" in a for a in f.advice)
    comp.compile = dataclasses.replace(
        comp.compile,
        compile_failures=[{"failed": "Unsupported", "reason": "Dynamo recompile limit exceeded", "count": 1}],
        recompile_reasons=["0/7: self.k == 7  # x * self.k  # m.py:3 in forward (HINT: make it a tensor.)"])
    (f,) = findings(session(comp, eager), "recompiles")
    assert "a Python value changed" in f.title and "recompile limit was hit" in f.title
    assert f.severity == HIGH and "torch's hint: make it a tensor." in f.advice


def test_cuda_graphs_skipped_on_a_gpu_and_absent_on_a_cpu():
    comp, eager = rows("cuda:0", "reduce-overhead", cudagraphs=[
        {"kind": "skipped", "text": "skipping cudagraphs due to mutated inputs (1 instances).", "count": 1}])
    (f,) = findings(session(comp, eager), "cudagraphs")
    assert f.title.startswith("CUDA graphs skipped: skipping cudagraphs due to mutated inputs")
    assert f.severity == HIGH and "mutates one of its inputs" in f.advice[0]
    comp.compile = dataclasses.replace(comp.compile, cudagraphs=[
        {"kind": "rerecorded", "count": 3, "text": "CUDAGraph supports dynamic shapes by recording a new "
                                                   "graph for each distinct input size. ..."}])
    (f,) = findings(session(comp, eager), "cudagraphs")
    assert f.title.startswith("CUDA graphs re-recorded") and "pad or bucket" in f.advice[0]
    cpu, eager = rows("cpu", "reduce-overhead")
    (f,) = findings(session(cpu, eager), "cudagraphs")
    assert f.severity == INFO and "no CUDA graphs" in f.title


def test_syncs_in_the_model_not_the_optimizers_step_counter():
    probe = {"op": "aten::item", "kind": "device_sync", "where": "forward › probe", "phase": "forward",
             "module": "probe", "via": "cudaStreamSynchronize", "context": None, "count": 1.0, "ms": 0.3,
             "ours": False}
    adam = {"op": "aten::item", "kind": "scalar_read", "where": "optimizer", "phase": "optimizer",
            "module": None, "context": "Optimizer.step#AdamW.step", "count": 6.0, "ms": 0.01, "ours": False}
    compiled_read = {**probe, "where": "forward", "module": None}
    comp, eager = rows("cuda:0", profiles=[capture(syncs=[adam, compiled_read])])
    eager.profiles = [capture(syncs=[probe, adam])]
    (f,) = findings(session(comp, eager), "syncs")
    assert f.title == "host syncs in the model: aten::item at forward › probe, 1 a step in default/fp32"
    assert f.severity == HIGH and f.cost_ms == 0.3
    assert "set_sync_debug_mode" in text(f) and "Optimizer.step" not in text(f)
    comp, eager = rows(profiles=[capture(syncs=[adam])])
    assert findings(session(comp, eager), "syncs") == []


def test_launch_bound_input_bound_and_an_eager_optimizer():
    graphs = {"calls": 2, "graphs": 2, "ms": 1, "forward_ms": 1, "backward_ms": 1}
    comp, eager = rows("cuda:0", gpu_util_mean=35.0, cpu_mean=99.0,
                       profiles=[capture(device_busy_ms=2.0, compiled_graphs=graphs)])
    (f,) = findings(session(comp, eager), "launch_bound")
    assert f.title == "launch-bound: the GPU idles 80% of the step, waiting for the host"
    assert f.severity == HIGH and "reduce-overhead" in f.advice[0] and "100 %" not in f.title
    assert any("99 % of a core" in e for e in f.evidence)
    comp, eager = rows(mean_data_ms=4.0)
    eager.timing = dataclasses.replace(eager.timing, mean_data_ms=4.0)
    (f,) = findings(session(comp, eager), "input_bound")
    assert f.title == "input-bound: 40% of each step waits for data" and f.severity == HIGH
    assert "num_workers" in f.advice[1]
    split = {"data_ms": 0.0, "forward_ms": 1.0, "backward_ms": 0.6, "optimizer_ms": 4.5, "step_ms": 6.0}
    comp, eager = rows(profiles=[capture(split=split, step_ms=6.0)])
    (f,) = findings(session(comp, eager), "optimizer")
    assert f.title == "the optimizer step runs eagerly: 75% of the compiled step" and f.cost_ms == 4.5


def test_the_top_op_diff_says_what_was_fused_and_what_stayed():
    eager_ops = [{"name": "aten::sqrt", "self_ms": 2.0}, {"name": "aten::mm", "self_ms": 3.8},
                 {"name": "aten::mul_", "self_ms": 1.0}]
    comp_ops = [{"name": "aten::mm", "self_ms": 3.7},
                {"name": "## Call CompiledFxGraph abc ##", "self_ms": 0.4},
                {"name": "TorchDynamo Cache Lookup", "self_ms": 0.3}, {"name": "aten::mul_", "self_ms": 1.6}]
    comp, eager = rows(profiles=[capture(top_ops=comp_ops)])
    eager.profiles = [capture(top_ops=eager_ops)]
    (f,) = findings(session(comp, eager), "ops")
    assert f.title == ("top ops: 2.00 ms a step of eager ops fused into 0.400 ms of compiled graphs; "
                       "1 op slower")
    body = text(f)
    assert "aten::sqrt 2.00 ms" in body and "about the same: aten::mm 3.70 ms" in body
    assert "slower (time added a step): aten::mul_ 0.600 ms" in body
    assert "compile's own per-step work (guards, cache lookups, autograd wrappers): 0.300 ms" in body
    assert any(a.startswith("aten::mm take the same time") for a in f.advice)


def test_a_disturbed_capture_gives_counts_and_names_not_times():
    split = {"data_ms": 0.0, "forward_ms": 20.0, "backward_ms": 2.0, "optimizer_ms": 20.0, "step_ms": 42.0}
    graphs = {"calls": 4.0, "graphs": 4, "ms": 1.0, "forward_ms": 0.5, "backward_ms": 0.5}
    broke = [{"where": "m.py:3", "reason": "x", "hint": None, "count": 1}]
    comp, eager = rows(p10_ms=1.5, graph_breaks=broke,
                       profiles=[capture(step_ms=42.0, split=split, compiled_graphs=graphs,
                                         top_ops=[{"name": "aten::mm", "self_ms": 9.0}])])
    eager.timing = dataclasses.replace(eager.timing, p10_ms=1.0)
    eager.profiles = [capture(step_ms=1.2, top_ops=[{"name": "aten::mm", "self_ms": 0.3},
                                                    {"name": "aten::sqrt", "self_ms": 0.2}])]
    found = {f.rule: f for f in findings(session(comp, eager))}
    assert "optimizer" not in found  # 20 ms of optimizer in a disturbed window says nothing
    breaks = found["graph_breaks"]
    assert "4 compiled graphs" in breaks.title and breaks.cost_ms is None
    assert any("28× its run's quick steps (p10 1.50 ms)" in e for e in breaks.evidence)
    ops = found["ops"]
    assert ops.title == "top ops: 1 of eager's top ops fused into compiled graphs" and ops.severity == INFO
    assert "slower" not in text(ops) and "aten::sqrt" in text(ops)


def test_memory_and_payoff():
    comp, eager = rows("cuda:0", cuda_peak_allocated=2048 * MiB)
    eager.probes = dataclasses.replace(eager.probes, cuda_peak_allocated=1024 * MiB)
    (f,) = findings(session(comp, eager), "memory")
    assert f.title == "+100 % memory against eager/fp32: CUDA peak allocated 2.0 GiB" and f.severity == HIGH
    comp, eager = rows(peak_rss=800 * MiB)
    eager.probes = dataclasses.replace(eager.probes, peak_rss=700 * MiB)
    (f,) = findings(session(comp, eager), "memory")
    assert f.severity == INFO and "counts the compile itself" in text(f)
    comp, eager = rows(failure_kind="oom-cuda", error="CUDA out of memory (tried 2.0 GiB)")
    assert findings(session(comp, eager), "memory")[0].title.startswith("default/fp32 ran out of memory")
    comp, eager = rows(breakeven_steps=500, breakeven_s=6.0, overhead_s=5.2,
                       compile_phases={"dynamo": 0.4, "codegen": 3.6})
    comp.timing = dataclasses.replace(comp.timing, median_ms=9.0)
    (f,) = findings(session(comp, eager), "payoff")
    assert f.title == "pays off after 500 steps; this run had 100"
    assert "most of the compile: codegen 3.6 s" in f.evidence


def test_diagnose_orders_findings_and_every_view_shows_them():
    comp, eager = rows(mean_data_ms=4.0, recompiles=1, recompile_reasons=["0/0: x == 1"],
                       graph_breaks=[{"where": "m.py:3", "reason": "print", "hint": None, "count": 2}])
    summary = session(comp, eager)
    (v,) = worded(summary)
    assert [f.rule for f in v.findings] == ["input_bound", "graph_breaks", "recompiles"]
    assert v.speedup.startswith("1.00× eager/fp32 (95 % CI 0.90–1.10), within noise") and not v.helped
    md = to_markdown({}, summary)
    why = md.split("## Why compile did not help")[1]
    assert "### default/fp32: 1.00× eager/fp32" in why and "compile did not help" in why
    assert "1. **input-bound: 40% of each step waits for data** (high)" in why
    assert "   - try: logging or printing inside forward breaks the graph" in why
    doc = json.loads(to_json({}, summary))
    assert [f["rule"] for f in doc["why"][0]["findings"]] == ["input_bound", "graph_breaks", "recompiles"]
    lines = top_lines(summary, n=2)
    assert lines[0].startswith("why default/fp32: 1.00×") and lines[-1].startswith("  and 1 more")
    # No compiled variant: no section at all.
    eager_only = SessionSummary([eager])
    assert diagnose(eager_only) == [] and "## Why" not in to_markdown({}, eager_only)
    alone, _ = rows()  # no eager run: no speedup to judge by, the findings still come
    alone.compile = dataclasses.replace(alone.compile, graph_breaks=[
        {"where": "m.py:3", "reason": "print", "hint": None, "count": 1}])
    alone_summary = SessionSummary([alone])
    (v,) = diagnose(alone_summary)
    assert top_lines(alone_summary)[0] == ("why default/fp32: no speedup measured (no eager run of its "
                                           "precision finished steps):")
    assert v.findings[0].rule == "graph_breaks"


def test_a_rule_that_fails_is_said_and_costs_nothing_else(monkeypatch):
    from tuimon.analysis import why

    def broken(ctx):
        raise KeyError("split")

    monkeypatch.setattr(why, "RULES", (broken, *why.RULES))
    comp, eager = rows(mean_data_ms=4.0)
    (v,) = worded(session(comp, eager))
    assert [f.rule for f in v.findings] == ["input_bound", "internal"]
    assert v.findings[1].title == "the broken rule failed: KeyError: 'split'"


# ---- the runner's side --------------------------------------------------------------------------------
class Said:
    def __init__(self) -> None:
        self.events: list[dict] = []

    def emit_now(self, type_: str, **fields) -> None:
        self.events.append({"type": type_, **fields})


def test_torch_cuda_graph_warnings_become_events():
    assert classify("skipping cudagraphs due to mutated inputs (2 instances). Found from :") == "skipped"
    assert classify("CUDAGraph supports dynamic shapes by recording a new graph for each distinct input "
                    "size. ... We have observed 9 distinct sizes.") == "rerecorded"
    assert classify("skipping cudagraph due to function 3 exceeding max re-recording limit") == "rerecorded"
    assert classify("torch._dynamo hit config.recompile_limit (8)") is None
    said = Said()
    listener = HintListener(said)
    listener.install()
    try:
        # Inductor's artifact logger propagates to torch._inductor, where the listener sits.
        logging.getLogger("torch._inductor.cudagraph_utils.__cudagraphs").warning(
            "skipping cudagraphs due to mutated inputs (1 instances).\nFound from:\n  File model.py")
        logging.getLogger("torch._inductor.compile_fx").info("skipping cudagraphs: below WARNING")
        logging.getLogger("torch._dynamo.convert_frame").warning("an unrelated warning")
    finally:
        listener.remove()
    assert said.events == [{"type": events.CUDAGRAPHS, "kind": "skipped",
                            "text": "skipping cudagraphs due to mutated inputs (1 instances). Found from: "
                                    "File model.py"}]


def test_a_capture_counts_compiled_graph_calls_and_the_device_busy_time():
    def cpu(name, start, end, **kw):
        return Ev(name, start, end, thread=1, **kw)

    evs = [cpu("ProfilerStep#1", 0, 100), cpu("tuimon: forward", 1, 40),
           cpu("## Call CompiledFxGraph a ##", 2, 12), cpu("aten::item", 13, 15),
           cpu("## Call CompiledFxGraph b ##", 16, 30), cpu("tuimon: backward", 41, 90),
           cpu("CompiledFunctionBackward", 42, 80), cpu("## Call CompiledFxGraph c ##", 43, 79),
           cpu("tuimon: optimizer", 91, 99),
           Ev("kernel_1", 5, 25, thread=7, cpu=False), Ev("kernel_2", 20, 35, thread=7, cpu=False),
           Ev("kernel_3", 50, 60, thread=8, cpu=False)]
    out = analyse(nest(link(evs)), steps=1)
    assert out["compiled_graphs"] == {"calls": 3.0, "graphs": 3, "ms": 0.06, "forward_ms": 0.024,
                                      "backward_ms": 0.036, "optimizer_ms": 0.0,
                                      # each graph's calls and time a step, the costliest first
                                      "by_graph": [{"name": "c", "calls": 1.0, "ms": 0.036},
                                                   {"name": "b", "calls": 1.0, "ms": 0.014},
                                                   {"name": "a", "calls": 1.0, "ms": 0.01}]}
    assert out["device_busy_ms"] == 0.04  # 5-35 and 50-60: overlaps counted once
    assert "compiled_graphs" not in analyse(nest(link(evs[:2])), steps=1)


def test_the_automatic_capture_waits_for_compiles_to_settle_and_fits_the_run():
    p = Profiler(device_type="cpu", model=None, compiled=True, auto=True, steps=100)
    assert p.next_step(100) == AUTO_FROM - AUTO_SETTLE
    p._look(5, compiles=2)  # first look: remember the compiles
    assert not p._pending and p.next_step(100) == 5 + AUTO_SETTLE
    p._look(10, compiles=3)  # a recompile since: look again later
    assert not p._pending and p.next_step(100) == 15
    p._look(15, compiles=3)  # settled
    assert p._pending == [(AUTO, "auto")] and p.next_step(100) == 100
    # A run that keeps recompiling still gets its capture after AUTO_TRIES looks.
    p = Profiler(device_type="cpu", model=None, compiled=True, auto=True, steps=1000)
    for k in range(AUTO_TRIES + 2):
        if p._pending:
            break
        p._look(p.next_step(1000), compiles=k)
    assert p._pending
    # Too short a run, a capture asked for at a step, or auto off: none.
    assert Profiler(device_type="cpu", model=None, compiled=True, auto=True, steps=20).next_step(20) == 20
    assert Profiler(device_type="cpu", model=None, compiled=True, auto=True, at_step=40).next_step(99) == 40
    assert Profiler(device_type="cpu", model=None, compiled=True, steps=100).next_step(100) == 100
    late = Profiler(device_type="cpu", model=None, compiled=True, auto=True, steps=30)
    late._auto = [28, 0, 1]
    late._look(28, compiles=0)  # the window would not end before the run does
    assert not late._pending and late.next_step(30) == 30


def test_an_automatic_capture_cut_short_is_taken_once_more():
    """Once more, in a window that fits the steps the turn held (ImageNet's 3.5 s steps in 3 s
    turns: one), and quietly: nobody asked for it, so no "profile 1 failed" line."""
    class Cut:  # what a window paused by the end of a turn hands back
        source, number, spans, notes, k = "auto", 1, None, [], 1
        left_open = []  # the spans the window stopped inside (none here: a recipe's boundary)

        def close(self):
            pass

        def result(self, compiles):
            return {"capture": 1, "state": "failed", "error": "the window ended before any active step"}

    p = Profiler(device_type="cpu", model=None, compiled=False, auto=True, steps=1000)
    p._auto = None  # the first one opened
    p.capture = Cut()
    failed = p.abort()
    assert failed["state"] == "failed" and failed["quiet"]
    assert p.next_step(1000) == 0  # at the next boundary (after the turn's pause)
    p._look(40, compiles=0)
    assert p._pending == [(Options(wait=0, warmup=0, active=1, backward=False), "auto")]
    p._pending.clear()
    p.capture = Cut()
    p.abort()
    assert p.next_step(1000) == 1000  # once only



def test_the_automatic_capture_through_begin_step(monkeypatch):
    from tuimon.runner.profiling import profiler as front

    class Fake:  # torch.profiler's place: begin_step's view of a capture
        def __init__(self, number, options, source, first_step, **kw):
            self.number, self.options, self.source, self.k = number, options, source, 3
            self.notes, self.modules, self.spans, self.trace = [], [], None, kw["trace_path"]
            self.left_open = []

        def prepare(self):
            pass

        def close(self):
            pass

        def result(self, compiles):
            return {"capture": self.number, "state": "done", "partial": True}

    monkeypatch.setattr(front, "Capture", Fake)
    p = Profiler(device_type="cpu", model=None, compiled=True, auto=True, steps=100, out_dir="/tmp/x")
    opened = []
    for i in range(40):
        if i >= p.next_step(100) or p.capture is not None:
            cap, started = p.begin_step(i, compiles=1 if i < 3 else 2)
            if started:
                opened.append((i, started["source"], cap.trace))
            if opened and i == opened[-1][0] + 1:
                p.abort()  # a turn ended inside the window: cut short
    assert opened == [(10, "auto", None), (12, "auto", None)]  # again at once, and no trace file
    # A capture the user asks for first: no automatic one.
    p = Profiler(device_type="cpu", model=None, compiled=True, auto=True, steps=100)
    p.request({}, "control")
    p.begin_step(2)
    p.capture = None
    assert p.next_step(100) == 100


def test_taking_turns_the_automatic_capture_opens_as_the_second_turn_begins(monkeypatch):
    from tuimon.runner.profiling import profiler as front

    monkeypatch.setattr(front, "Capture", lambda number, options, source, i, **kw: type(
        "Fake", (), {"number": number, "source": source, "notes": [], "modules": [], "spans": None,
                     "prepare": lambda self: None})())
    p = Profiler(device_type="cpu", model=None, compiled=True, auto=True, steps=100, turns=True)
    p.turn_began()  # the first turn: the other runs are still building and compiling
    assert p.next_step(100) == 100
    for i in range(30):
        assert p.begin_step(i, compiles=1) == (None, None)
    p.turn_began()
    cap, started = p.begin_step(30, compiles=1)
    assert started["source"] == "auto" and started["first_step"] == 30



def test_an_unreliable_speedup_is_neither_help_nor_no_help():
    """vae under load: '7.49× (95 % CI 2.11–26.67) — unreliable: other processes' load differed —
    compile did not help'. A number that cannot be trusted says neither; the clear one still does."""
    from tuimon.analysis.stats.point import point

    comp, eager = rows()
    comp.timing = dataclasses.replace(comp.timing, median_ms=2.0)  # 5× faster, its interval clear of 1
    summary = session(comp, eager)
    (v,) = worded(summary)
    assert v.helped and not v.doubted and v.headline.endswith("— compile helped")
    comp.doubts = [point("recompiled", steps=2, first=40)]
    (v,) = worded(session(comp, eager))
    assert not v.helped and v.doubted
    assert v.headline.endswith("— cannot tell whether compile helped")
    assert json.loads(to_json({}, session(comp, eager)))["why"][0]["doubted"] is True
