"""The real runs of tests/unit/test_script_compiles.py: the CLI in a child process, real scripts and compiles.
The pure tests of the same feature stay in tests/unit/test_script_compiles.py."""

from __future__ import annotations

import json

import pytest
from test_end_to_end import TINY, runs_of
from test_script_compiles import PY, script, summary_of


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
    comp = row["compile"]
    assert comp["recompiles"] == 0 and comp["recompile_reasons"] == []
    assert comp["val_compiles"] == len(val) and "grad_mode" in row["words"]["val_guards"]
    train_s, val_s = (sum(c["seconds"] for c in cs) for cs in (train, val))
    assert abs(comp["compile_s"] - train_s) < 0.5 * val_s, (comp["compile_s"], train_s, val_s)
    assert comp["val_compile_s"] > 0.5 * val_s
    assert "· 0 recompiles" in md
    assert f"- default/script: validation: {len(val)} compile" in md and "grad_mode" in md
    why = {v["run"]: v for v in data["why"]}["default-script"]
    assert not [f for f in why["findings"] if f["rule"] == "recompiles"], why
    assert not any("recompile" in x for x in data["verdict"]["reasons"])


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
    assert rows_["default-script"]["words"]["nothing_compiled"] == why
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
    assert rows_["default-script"]["words"]["nothing_compiled"] is None


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
