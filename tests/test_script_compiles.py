"""What a script's compiled variant compiled (issue 24, points 2 and 4): a validation pass's
compiles kept apart from training's (never counted, timed or ranked as its recompiles), and a
variant that compiled nothing named so, with --compile-module to say what to compile. Real
scripts written the way people write them (tests/scripts/), and the pieces on their own."""

from __future__ import annotations

import json
import sys

import pytest
import torch
from conftest import SCRIPTS
from test_end_to_end import TINY, runs_of
from test_stats import run_events
from test_why_rules import capture, findings, rows, session

from tuimon import events
from tuimon.analysis.stats import summarize
from tuimon.analysis.stats.compiles import guard_kind
from tuimon.report.compile_text import guard_word
from tuimon.report.verdict_text import disqualified
from tuimon.runner.script.compile_modes import CompileModes
from tuimon.runner.script.validation import Validating

PY = sys.executable


def script(name: str) -> str:
    return str(SCRIPTS / name)


def summary_of(session) -> tuple[dict, dict, str]:
    data = json.loads((session / "summary.json").read_text())
    return data, {r["run"]: r for r in data["runs"]}, (session / "summary.md").read_text()


# ---- point 2: validation passes ---------------------------------------------------------------
def test_an_mnist_test_pass_compiles_apart_from_training(tuimon):
    """pytorch/examples' MNIST loop: train, then model.eval() + no_grad() over the test loader
    each epoch. The test pass's compile (grad_mode) is no training recompile: 0 recompiles, the
    compile time is training's alone, Why ranks no recompile; the validation compiles are said
    apart."""
    proc, session = tuimon("run", "--headless", "--modes", "eager,default", "--steps", "25", "--",
                           PY, script("mnist_style.py"), timeout=600)
    assert proc.returncode == 0, proc.stderr
    _, runs = runs_of(session)
    compiled = runs["default-script"]
    # 10 steps an epoch: the test passes sit in steps 10 and 20 (gaps); the first one compiled
    assert [s["i"] for s in compiled["step"] if s.get("gap")] == [10, 20]
    recompiles = compiled["recompile"]
    assert recompiles and all(e.get("validation") for e in recompiles), recompiles
    assert any("grad_mode" in x for e in recompiles for x in e["reasons"])
    train = [c for c in compiled["compile"] if not c.get("validation")]
    val = [c for c in compiled["compile"] if c.get("validation")]
    assert train and val
    finished = compiled["finished"][0]
    assert finished["recompiles"] == 0 and finished["val_compiles"] == len(val)
    # The steps' compile time is training's: the test pass's step holds none of it.
    assert not any(s.get("compile_ms") for s in compiled["step"] if s.get("gap"))
    data, rows_, md = summary_of(session)
    row = rows_["default-script"]
    assert row["recompiles"] == 0 and row["recompile_reasons"] == []
    assert row["val_compiles"] == len(val) and "grad_mode" in row["val_words"]
    train_s, val_s = (sum(c["seconds"] for c in cs) for cs in (train, val))
    assert abs(row["compile_s"] - train_s) < 0.5 * val_s, (row["compile_s"], train_s, val_s)
    assert row["val_compile_s"] > 0.5 * val_s
    assert "· 0 recompiles" in md
    assert f"- default/script: validation: {len(val)} compile" in md and "grad_mode" in md
    why = {v["run"]: v for v in data["why"]}["default-script"]
    assert not [f for f in why["findings"] if f["rule"] == "recompiles"], why
    assert not any("recompile" in x for x in data["verdict"]["reasons"])


def test_validation_state_and_whose_a_compile_is():
    v = Validating()
    assert not v.compile("0/0")  # training
    v.eval_mode()
    assert v.compile("1/0") is False  # eval mode, gradients on: a frozen module in training
    with torch.no_grad():
        assert v.compile("1/1") is True  # eval mode and no grad: a validation pass
        assert v.compile("1/0") is False  # decided once per compile (its backward says the same)
    v.training()
    with torch.no_grad():
        assert v.compile("2/0") is False
    v.other_loader()  # another loader's batches: validation, grad or not
    assert v.compile("3/0") is True


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


# ---- point 4: a variant that compiled nothing --------------------------------------------------
def test_a_script_without_a_torch_optim_optimizer_says_nothing_was_compiled(tuimon, tmp_path):
    """word_language_model's loop: hand-written SGD (p.data.add_(p.grad, alpha=-lr)), no
    torch.optim optimizer, so no module for tuimon to compile. The verdict says nothing was
    compiled instead of a speedup, and Why claims no fusion."""
    proc, session = tuimon("run", "--headless", "--modes", "eager,default", "--steps", "30",
                           "--profile-at", "8", "--", PY, script("manual_sgd.py"),
                           "--save", str(tmp_path / "model.pt"))
    assert proc.returncode == 0, proc.stderr
    _, runs = runs_of(session)
    assert "compile" not in runs["default-script"]
    data, rows_, md = summary_of(session)
    why = ("no torch.optim optimizer, so tuimon found no module to compile; pass --compile-module "
           "NAME (a module's class) or call torch.compile in the script")
    assert data["verdict"]["kind"] == "none"
    assert data["verdict"]["line"] == f"Verdict: no answer: nothing was compiled in default/script — {why}."
    assert f"- default/script: nothing was compiled — {why}" in md
    assert rows_["default-script"]["nothing_compiled"] == why
    (whys,) = [w for w in data["why"] if w["compiled"]]  # beside eager's: what bounds its step
    assert whys["speedup"] == "nothing was compiled: it ran eager" and not whys["helped"]
    assert [f["rule"] for f in whys["findings"]] == ["uncompiled"]
    assert "fused" not in json.dumps(whys) and "fused" not in md
    assert all(any(p.get("state") == "done" for p in r["profile"]) for r in runs.values())


def test_compile_module_names_the_module_to_compile(tuimon, tmp_path):
    """--compile-module LanguageModel: the same script compiles, its evaluate() pass (eval +
    no_grad, no DataLoader) apart."""
    proc, session = tuimon("run", "--headless", "--modes", "default", "--steps", "24",
                           "--compile-module", "LanguageModel", "--", PY, script("manual_sgd.py"),
                           "--save", str(tmp_path / "model.pt"), timeout=600)
    assert proc.returncode == 0, proc.stderr
    _, runs = runs_of(session)
    kinds = runs["default-script"]
    notes = [w["text"] for w in kinds["warning"]]
    assert any("tuimon compiled LanguageModel (--compile-module LanguageModel)" in t for t in notes)
    assert not any(w.get("uncompiled") for w in kinds["warning"])
    assert [c for c in kinds["compile"] if c["forward"] and not c.get("validation")]
    assert [c for c in kinds["compile"] if c.get("validation")]  # evaluate() after 20 steps
    _, rows_, _ = summary_of(session)
    assert rows_["default-script"]["nothing_compiled"] is None


@pytest.mark.parametrize(("args", "expected"), [
    (["--compile-module", "a b", "--", PY, script("manual_sgd.py")], "a module's class name"),
    (["--compile-module", "Net", "--no-auto-compile", "--", PY, script("manual_sgd.py")],
     "do not go together"),
    ([TINY, "--compile-module", "Net"], "--compile-module is a script option"),
])
def test_compile_module_bad_input_is_one_line(tuimon, args, expected):
    proc, session = tuimon("run", "--headless", *args)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and expected in proc.stderr, proc.stderr
    assert session is None


def test_no_module_holding_all_the_optimizers_parameters_says_nothing_will_compile():
    said = []
    modes = CompileModes("default", True, lambda text, **fields: said.append((text, fields)))
    encoder, head = torch.nn.Linear(4, 4), torch.nn.Linear(4, 2)
    opt = torch.optim.SGD([*encoder.parameters(), *head.parameters()], lr=0.1)
    modes.optimizer_made(opt)
    head(encoder(torch.randn(2, 4)))  # two modules, neither holds all the optimizer trains
    modes.first_step(optimizers=1)
    (text, fields), = said
    assert text.startswith("nothing was compiled — no module called holds all the parameters the "
                           "optimizer trains, so tuimon found no module to compile; pass "
                           "--compile-module NAME")
    assert fields == {"uncompiled": text.split(" — ", 1)[1]}
    assert modes._hook is None  # the global hook is gone


def test_compile_module_that_is_never_called_names_those_that_were():
    said = []
    modes = CompileModes("default", True, lambda text, **fields: said.append(text), module="Decoder")
    modes._hook = torch.nn.modules.module.register_module_forward_pre_hook(modes._named_call)
    torch.nn.Sequential(torch.nn.Linear(4, 4))(torch.randn(2, 4))
    modes.first_step(optimizers=0)
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
