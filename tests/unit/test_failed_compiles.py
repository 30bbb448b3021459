"""A compile that failed is no compile (issue 33, item 2): pytorch/examples' mnist_rnn (an LSTM
Dynamo cannot wrap) and gcn (sparse tensors) ran eager in their compiled variant, yet tuimon
counted the attempt as a graph, weighed a speedup and a break-even. A variant counts as compiled
only where compiled graphs ran; what fell back to eager is said, with torch's reason.

The runner's side on real torch compiles (in process), the analysis on synthetic events, and
faithful reproductions of the two scripts run by tuimon (tests/scripts/).

The real runs are in tests/e2e/test_failed_compiles_runs.py."""

from __future__ import annotations

import sys

import pytest
import torch
from said import worded
from test_stats import run_events

from tuimon import events
from tuimon.analysis.stats import summarize
from tuimon.report.compile_text import fallback_text, nothing_text
from tuimon.report.table import breakeven_text, compile_notes, graphs_text, speedup_text
from tuimon.report.verdict_text import line
from tuimon.runner.compile_trace import TraceListener
from tuimon.runner.compile_watch import CompileWatch

PY = sys.executable
RNN = "Attempted to wrap RNN, GRU, or LSTM"
RNN_REASON = (f"{RNN}\n  Explanation: Dynamo does not support RNN, GRU, or LSTM.\n"
              "  Hint: Set torch._dynamo.config.allow_rnn=True to enable experimental support for "
              "RNN, GRU, and LSTM in Dynamo\n\n  Developer debug context: mod: LSTM(28, 64)\n")


class Emitter:
    def __init__(self) -> None:
        self.said: list[dict] = []

    def emit_now(self, kind: str, **fields) -> None:
        self.said.append({"type": kind, **fields})

    emit = emit_now

    def of(self, kind: str) -> list[dict]:
        return [e for e in self.said if e["type"] == kind]


@pytest.fixture
def listening():
    """A CompileWatch and a TraceListener on torch's own callbacks and trace, as a compiled
    variant's runner has them; both taken off afterwards."""
    import logging

    from torch._dynamo.callback import callback_handler

    torch._dynamo.reset()
    watch, emitter = CompileWatch(), Emitter()
    watch.install()
    trace = TraceListener(emitter, watch)
    trace.install()
    yield watch, trace, emitter
    logging.getLogger("torch.__trace").removeHandler(trace)
    callback_handler.remove_start_callback(watch._start)
    callback_handler.remove_end_callback(watch._end)
    torch._dynamo.reset()


class LSTMNet(torch.nn.Module):  # mnist_rnn's shape: an LSTM over the rows, a linear head
    def __init__(self) -> None:
        super().__init__()
        self.rnn = torch.nn.LSTM(8, 8, batch_first=True)
        self.fc = torch.nn.Linear(8, 4)

    def forward(self, x):
        out, _ = self.rnn(x)
        return self.fc(out[:, -1])


def test_a_frame_dynamo_could_not_compile_is_no_graph_and_no_graph_break(listening):
    """Real torch: Dynamo's only attempt at an LSTM model fails. The watch saw a compile start
    (the step is disturbed all the same) but counts no compile, says torch's reason, and the
    graph break torch logged while it tried is no break between graphs (there is none)."""
    watch, trace, emitter = listening
    model = LSTMNet()
    model.compile()
    model(torch.randn(2, 3, 8)).sum().backward()
    (c,) = emitter.of(events.COMPILE)
    assert c["failed"] == "Unsupported" and c["graph"] is False and c["fail_reason"].startswith(RNN)
    assert c["fail_where"] and c["fail_where"].endswith(".py:" + c["fail_where"].rsplit(":", 1)[1])
    assert emitter.of(events.GRAPH_BREAK) == [] and trace.graph_breaks == 0
    assert watch.count == 1 and watch.train_count == 0 and watch.compiled == 0
    text = watch.nothing_compiled("default")
    assert text.startswith("nothing was compiled: Dynamo could not compile forward() "
                           "(test_failed_compiles.py:")
    assert f"): {RNN}; this default variant ran eager" in text


def test_beside_a_failed_frame_a_compiled_one_counts_and_its_graph_breaks_are_said(listening):
    """Real torch: the LSTM encoder fails, the head compiles (and breaks once at a print):
    one compile counted, the head's graph break said; not 'nothing compiled'."""
    watch, trace, emitter = listening

    def head(x):
        x = torch.relu(x)
        print("", end="")  # a graph break: two graphs
        return x * 2

    encoder, compiled_head = LSTMNet(), torch.compile(head)
    encoder.compile()
    compiled_head(encoder(torch.randn(2, 3, 8))).sum().backward()
    made = [c for c in emitter.of(events.COMPILE) if c["forward"] and c["graph"]]
    failed = [c for c in emitter.of(events.COMPILE) if c["failed"]]
    assert len(failed) == 1 and made
    assert trace.graph_breaks == len(emitter.of(events.GRAPH_BREAK)) >= 1
    assert watch.train_count >= 1 and watch.nothing_compiled("default") is None
    assert watch.fell_back and watch.fell_back[0].startswith("forward() (test_failed_compiles.py:")


# ---- the analysis, on events --------------------------------------------------------------------
def compile_event(run, compile_id, *, failed=None, graph_ops=12, frame="forward", validation=False,
                  where="/w/main.py:22", fail_where="/w/main.py:28", reason=RNN_REASON, **extra):
    fields = dict(compile_id=compile_id, forward=True, frame=frame, where=where, seconds=0.9,
                  phases={"dynamo": 0.9}, graph_ops=None if failed else graph_ops,
                  graph=not failed and graph_ops != 0, failed=failed,
                  fail_reason=reason if failed else None, fail_where=fail_where if failed else None)
    if validation:
        fields["validation"] = True
    return events.make(events.COMPILE, run, **{**fields, **extra})


def sessions(compiles: list[dict], *, compiles_finished=0) -> list[dict]:
    """eager and default, 10 ms a step alike (the compiled one ran eager), its first step 1 s."""
    eager = run_events("eager-script", "eager", "script", [10.0] * 60)
    default = run_events("default-script", "default", "script", [10.2] * 60, first_ms=1000.0)
    default[-1].update(compiles=compiles_finished, compile_s=0.9)
    default[2:2] = compiles
    return [events.make(events.SESSION_STARTED, schedule="interleave"), *eager, *default]


def test_a_variant_whose_only_compile_failed_compiled_nothing():
    """mnist_rnn: no graph counted, the verdict does not weigh it, no speedup, no break-even,
    and Why gives torch's reason and hint."""
    s = summarize(sessions([compile_event("default-script", "0/0", failed="Unsupported")]))
    r = next(r for r in s.runs if r.run == "default-script")
    why = f"Dynamo could not compile forward() (main.py:28): {RNN}"
    assert r.compile.graphs_fwd == 0 and nothing_text(r.compile.nothing_compiled) == why
    assert graphs_text(r) == "nothing compiled" and breakeven_text(r) == "– (nothing compiled)"
    assert speedup_text(r) == "– (nothing compiled: it ran eager)"
    assert s.verdict.kind == "none" and s.verdict.winner is None
    assert line(s.verdict) == f"Verdict: no answer: nothing was compiled in default/script — {why}."
    (v,) = [v for v in worded(s) if v.compiled]
    (f,) = v.findings
    assert f.rule == "uncompiled" and f.title == f"nothing was compiled — {why}"
    assert any("allow_rnn=True" in a for a in f.advice), f.advice


def test_a_failed_compile_recorded_before_events_said_graph_is_no_graph_either():
    """A session recorded before the compile event said ``graph``: failed, or zero graph ops."""
    old = compile_event("default-script", "0/0", failed="Unsupported")
    del old["graph"], old["fail_where"]
    (_, r) = summarize(sessions([old])).runs
    assert r.compile.graphs_fwd == 0
    assert nothing_text(r.compile.nothing_compiled) == \
        f"Dynamo could not compile forward() (main.py:22): {RNN}"


def test_frames_that_made_no_graph_are_no_compile():
    """Dynamo compiled frames of plain Python (zero graph ops): nothing reached a backend."""
    (_, r) = summarize(sessions([compile_event("default-script", "0/0", graph_ops=0)])).runs
    assert r.compile.graphs_fwd == 0
    assert nothing_text(r.compile.nothing_compiled) == \
        "Dynamo found no tensor operation to compile in forward()"


def test_some_frames_compiled_and_one_fell_back_says_which_and_why():
    s = summarize(sessions([compile_event("default-script", "0/0", failed="Unsupported", frame="encode"),
                            compile_event("default-script", "1/0", frame="head")], compiles_finished=1))
    r = next(r for r in s.runs if r.run == "default-script")
    assert r.compile.graphs_fwd == 1 and r.compile.nothing_compiled is None
    assert [fallback_text(f) for f in r.compile.fell_back] == [
        f"Dynamo could not compile encode() (main.py:28): {RNN}"]
    assert graphs_text(r).endswith("· 1 frame ran eager")
    assert f"default/script: ran eager, not compiled: Dynamo could not compile encode() (main.py:28): {RNN}" \
        in compile_notes(s)
    (v,) = [v for v in worded(s) if v.compiled]
    (f,) = [f for f in v.findings if f.rule == "fallback"]
    assert f.title == "1 frame ran eager beside 1 compiled graph: Dynamo could not compile encode()"


def test_only_a_validation_pass_tried_and_failed():
    """gcn: the first compiled call was an eval pass's (no grad) and failed on the sparse
    adjacency; training then ran the frame eager. The variant compiled nothing, said with
    torch's reason; its validation row says it fell back."""
    sparse = "Attempted to wrap sparse Tensor\n  Explanation: torch.compile does not support sparse Tensors"
    s = summarize(sessions([compile_event("default-script", "0/0", failed="Unsupported", validation=True,
                                          reason=sparse, fail_where="/w/main.py:58"),
                            compile_event("default-script", "1/0", failed="Unsupported", validation=True,
                                          reason=sparse, fail_where="/w/main.py:104")]))
    r = next(r for r in s.runs if r.run == "default-script")
    assert r.compile.val_compiles == 0 and r.compile.graphs_fwd == 0
    assert nothing_text(r.compile.nothing_compiled) == (
        "Dynamo could not compile forward() (main.py:58): Attempted to wrap sparse Tensor (tried in eval "
        "mode with gradients off; training then ran it eager too)")
    assert s.verdict.kind == "none"


def test_the_recompile_limit_is_no_fallback_of_a_frame_that_compiled():
    limit = compile_event("default-script", "0/8", failed="Unsupported",
                          reason="Dynamo recompile limit exceeded\n  Explanation: ...")
    (_, r) = summarize(sessions([compile_event("default-script", "0/0"), limit], compiles_finished=1)).runs
    assert r.compile.graphs_fwd == 1 and r.compile.fell_back == [] and r.compile.nothing_compiled is None
    assert [f["reason"] for f in r.compile.compile_failures] == ["Dynamo recompile limit exceeded"]
