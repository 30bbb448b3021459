"""What a script's compiled variant compiled (issue 24, points 2 and 4): a validation pass's
compiles kept apart from training's (never counted, timed or ranked as its recompiles), and a
variant that compiled nothing named so, with --compile-module to say what to compile. Real
scripts written the way people write them (tests/scripts/), and the pieces on their own.

The real runs are in tests/e2e/test_script_compiles_runs.py."""

from __future__ import annotations

import json
import sys

import pytest
import torch
from conftest import SCRIPTS
from test_stats import run_events
from test_why_rules import capture, findings, rows, session

from tuimon import events
from tuimon.analysis.stats import summarize
from tuimon.analysis.stats.compiles import guard_kind
from tuimon.report.compile_text import guard_word
from tuimon.report.verdict_text import disqualified
from tuimon.runner.emitter import Emitter
from tuimon.runner.script.anatomy import Anatomy
from tuimon.runner.script.compile_modes import CompileModes
from tuimon.runner.script.lead import Lead
from tuimon.runner.script.validation import NO_GRAD, VALIDATION, Validating

PY = sys.executable


def script(name: str) -> str:
    return str(SCRIPTS / name)


def summary_of(session) -> tuple[dict, dict, str]:
    data = json.loads((session / "summary.json").read_text())
    return data, {r["run"]: r for r in data["runs"]}, (session / "summary.md").read_text()


def test_validation_state_and_whose_a_compile_is():
    v = Validating()
    assert v.compile("0/0") is None  # training
    v.eval_mode()
    assert v.compile("1/0") is None  # eval mode, gradients on: a frozen module in training
    with torch.no_grad():
        assert v.compile("1/1") == VALIDATION  # eval mode and no grad: a validation pass
        assert v.compile("1/0") is None  # decided once per compile (its backward says the same)
        assert v.compile("1/2", backward=True) is None  # a lazy backward: gradients off inside it
    v.training()
    with torch.no_grad():  # the model called without gradients outside a pass: sampling
        assert v.compile("2/0") == NO_GRAD
    v.other_loader()  # another loader's batches: validation, grad or not
    assert v.compile("3/0") == VALIDATION


def test_lightnings_sanity_check_compile_is_not_a_training_recompile():
    """The sanity check compiles first (validation); training's compile of the same code is
    torch's recompile (grad_mode) but training's first: counted nowhere as a recompile."""
    evs = run_events("default-script", "default", "script", [10.0] * 40, first_ms=900.0)
    evs[2:2] = [
        events.make(events.COMPILE, "default-script", compile_id="0/0", forward=True, seconds=0.3,
                    validation=True),
        events.make(events.RECOMPILE, "default-script", compile_id="0/1", after_validation=True,
                    reasons=["0/0: GLOBAL_STATE changed: grad_mode "]),
        events.make(events.COMPILE, "default-script", compile_id="0/1", forward=True, seconds=0.8,
                    phases={"dynamo": 0.1, "codegen": 0.7}),
        events.make(events.RECOMPILE, "default-script", compile_id="0/2", validation=True,
                    reasons=["0/1: tensor 'x' size mismatch at index 0. expected 32, actual 8"]),
    ]
    (r,) = summarize(evs).runs
    c = r.compile
    assert c.recompiles == 0 and c.graphs_fwd == 1 and c.val_compiles == 1 and c.val_recompiles == 1
    assert [guard_word(g) for g in r.compile.val_guards] == ["grad_mode", "batch 8"]
    assert r.compile.compile_phases == {"dynamo": 0.1, "codegen": 0.7}


def test_training_compile_in_a_warmup_gap_is_still_warmup():
    """Step 0 held a sanity check (a gap) and training's compile: the compile counts in the
    warm-up overhead, the rest of the gap does not."""
    evs = run_events("default-script", "default", "script", [10.0] * 40)
    step0 = next(e for e in evs if e["type"] == events.STEP and e["i"] == 0)
    step0.update(ms=5000.0, compile_ms=800.0, gap=1)
    (r,) = summarize(evs).runs
    assert r.timing.overhead_s == pytest.approx(0.8, abs=0.05)


def test_guards_in_a_word():
    def word(reason: str) -> str:
        return guard_word(guard_kind(reason))

    assert word("0/0: GLOBAL_STATE changed: grad_mode ") == "grad_mode"
    assert word("0/1: tensor 'x' size mismatch at index 0. expected 64, actual 8") == "batch 8"
    assert word("tensor 'x' size mismatch at index 1. expected 35, actual 34") == "size 34 at dim 1"
    assert word("0/0: L['self'].training == True  # m.py:3") == "train/eval mode"


def test_no_module_holding_the_optimizers_parameters_says_nothing_will_compile():
    said = []
    modes = CompileModes("default", True, lambda text, **fields: said.append((text, fields)))
    trained, other = torch.nn.Linear(4, 4), torch.nn.Linear(4, 2)
    opt = torch.optim.SGD(trained.parameters(), lr=0.1)
    modes.optimizer_made(opt)
    other(torch.randn(2, 4))  # the trained module is never called through its __call__
    modes.trained.first_step(optimizers=1)
    (text, fields), = said
    assert text.startswith("nothing was compiled — no module called holds any of the parameters "
                           "the optimizer trains, so tuimon found no module to compile; pass "
                           "--compile-module NAME")
    assert fields == {"uncompiled": text.split(" — ", 1)[1]}
    assert modes.trained._hook is None  # the global hook is gone


def test_an_optimizer_over_two_modules_called_apart_compiles_both():
    """One optimizer over two modules the script calls apart (an RL agent's actor and critic
    through its methods, CycleGAN's two generators): both compiled, each at its own call."""
    said, anatomy = [], Anatomy(Emitter(None, "r"), Lead(lambda text, **f: None))
    modes = CompileModes("default", True, lambda text, **fields: said.append(text), anatomy=anatomy)
    modes._orig_compile = lambda fn, **kw: fn  # compiled "in place": the slot is filled
    encoder, head = torch.nn.Sequential(torch.nn.Linear(4, 4)), torch.nn.Linear(4, 2)
    opt = torch.optim.SGD([*encoder.parameters(), *head.parameters()], lr=0.1)
    anatomy.made(opt)
    modes.optimizer_made(opt)
    head(encoder(torch.randn(2, 4)))  # neither holds all: each is a part (encoder's Linear is in it)
    modes.trained.first_step(optimizers=1)
    assert encoder._compiled_call_impl is not None and head._compiled_call_impl is not None
    assert encoder[0]._compiled_call_impl is None  # inside a part: compiled with it
    assert [s for s in said if s.startswith("the script never")] == [
        "the script never calls torch.compile: tuimon compiled Sequential (the module an optimizer "
        "trains) with mode='default' at its first call, which ran eager (--no-auto-compile turns "
        "this off)", "the script never calls torch.compile: tuimon compiled Linear (the module an "
        "optimizer trains) with mode='default' at its first call, which ran eager "
        "(--no-auto-compile turns this off)"]
    (row,) = [o.row() for o in anatomy.optimizers]
    assert row["module"] == "Sequential + Linear" and row["compiled"] == "tuimon"


def test_compile_module_that_is_never_called_names_those_that_were():
    said = []
    modes = CompileModes("default", True, lambda text, **fields: said.append(text), module="Decoder")
    modes.trained.install()
    torch.nn.Sequential(torch.nn.Linear(4, 4))(torch.randn(2, 4))
    modes.trained.first_step(optimizers=0)
    assert said == ["nothing was compiled — no module of class Decoder was called in the first step "
                    "(modules called: Sequential, Linear); give --compile-module one of those, or "
                    "call torch.compile in the script"]


def test_a_capture_without_compiled_graphs_claims_no_fusion():
    eager_ops = [{"name": "aten::addmm", "self_ms": 0.1}, {"name": "aten::tanh", "self_ms": 0.003}]
    comp, eager = rows(profiles=[capture(top_ops=[{"name": "aten::addmm", "self_ms": 0.1}])])
    eager.profiles = [capture(top_ops=eager_ops)]
    (f,) = findings(session(comp, eager), "ops")
    assert "fused into" not in f.title and "no compiled graph ran" in f.title


def test_the_verdict_names_a_variant_that_compiled_nothing_beside_one_that_did():
    from test_verdict import variant

    evs = [*variant("eager", "script", 10.0, seed=1), *variant("default", "script", 8.0, seed=2,
                                                               compile_s=2)]
    for e in variant("max-autotune-no-cudagraphs", "script", 10.0, seed=3):  # 3 processes
        if e["type"] == events.FINISHED:  # each of them said it compiled nothing
            evs.append(events.make(events.WARNING, e["run"], note=True, text="nothing was compiled — x",
                                   uncompiled="x"))
        evs.append(e)
    v = summarize(evs).verdict
    assert v.winner == "default/script"
    (nothing,) = [d for d in disqualified(v) if d["label"] == "max-autotune-no-cudagraphs/script"]
    assert nothing["uncompiled"] == "x" and nothing["reason"] == "nothing was compiled — x"
