"""Issue 25, the usual remedy raced: MODE+opt compiles the optimizer step too
(runner/compile_optimizer.py), for recipes and scripts; --compile-optimizer adds the +opt twin of
each compiled mode. On an optimizer-bound recipe the eager run is named optimizer-bound and the
compiled variant's diagnosis says what the +opt variant did."""

from __future__ import annotations

import json
import sys

import pytest
import torch
from conftest import SCRIPTS, TEST_RECIPES
from test_end_to_end import runs_of

from tuimon.runner.compile_optimizer import compile_step
from tuimon.variants import compiles_optimizer, model_mode, parse_modes

PY = sys.executable
ONE_THREAD = {"OMP_NUM_THREADS": "1"}  # 2 cores shared with others: no OpenMP barrier waits


def test_modes_take_an_opt_suffix_and_the_flag_adds_twins():
    assert parse_modes("eager,default+opt") == ["eager", "default+opt"]
    assert parse_modes("eager,default,max-autotune", compile_optimizer=True) == [
        "eager", "default", "default+opt", "max-autotune", "max-autotune+opt"]
    assert parse_modes("eager", compile_optimizer=True) == ["eager", "eager+opt"]
    assert parse_modes("default,default+opt", compile_optimizer=True) == ["default", "default+opt"]
    assert model_mode("reduce-overhead+opt") == "reduce-overhead" and compiles_optimizer("eager+opt")
    with pytest.raises(ValueError, match=r"unknown mode 'fast\+opt' .*MODE\+opt compiles"):
        parse_modes("eager,fast+opt")


@pytest.mark.parametrize("make", [lambda p: torch.optim.AdamW(p, lr=1e-2, foreach=False),
                                  lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9)])
def test_a_compiled_step_updates_as_the_eager_one_without_a_graph_break(make, inductor_cache, monkeypatch):
    import torch._dynamo as dyn
    import torch.optim.optimizer as optim
    from torch._dynamo.utils import counters

    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(inductor_cache))  # the suite's: no cold compile
    dyn.reset()
    counters.clear()
    torch.manual_seed(0)
    model = torch.nn.Sequential(*[torch.nn.Linear(4, 4) for _ in range(3)])
    ref = torch.nn.Sequential(*[torch.nn.Linear(4, 4) for _ in range(3)])
    ref.load_state_dict(model.state_dict())
    opt, ref_opt = make(model.parameters()), make(ref.parameters())
    assert compile_step(torch, opt)
    seen = []
    handle = optim.register_optimizer_step_post_hook(lambda o, a, k: seen.append(o))
    try:
        x = torch.randn(2, 4)
        for _ in range(4):
            for m, o in ((model, opt), (ref, ref_opt)):
                m(x).pow(2).sum().backward()
                o.step()
                o.zero_grad()
    finally:
        handle.remove()
    for a, b in zip(model.parameters(), ref.parameters(), strict=True):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)
    assert sum(counters["graph_break"].values()) == 0  # torch's own breaks in _use_grad: avoided
    assert seen.count(opt) == 4  # the step hooks (a script's boundary) still run, outside
    assert torch.is_grad_enabled()
    assert not compile_step(torch, object())  # not torch's hooked step: left alone


def test_an_optimizer_bound_recipe_raced_with_its_optimizer_compiled(tuimon):
    proc, session = tuimon(str(TEST_RECIPES / "optimizer_heavy.py"), "--set", "params=40",
                           "--headless", "--modes", "eager,default", "--compile-optimizer",
                           "--steps", "40", env=ONE_THREAD, timeout=900)
    assert proc.returncode == 0, proc.stderr
    evs, runs = runs_of(session)
    assert set(runs) == {"eager-fp32", "default-fp32", "default+opt-fp32"}
    notes = runs["default+opt-fp32"]["run_started"][0]["notes"]
    assert "the optimizer's step is compiled too (mode default)" in notes
    assert any(c.get("frame") == "step" for c in runs["default+opt-fp32"]["compile"])
    assert "graph_break" not in runs["default+opt-fp32"]
    summary = json.loads((session / "summary.json").read_text())
    rows = {r["run"]: r for r in summary["runs"]}
    opt = {run: rows[run]["phases"]["step_phases"]["optimizer"] for run in rows}
    assert opt["default+opt-fp32"]["median_ms"] < 0.7 * opt["default-fp32"]["median_ms"], opt
    assert opt["default-fp32"]["speedup_hi"] > 0.8  # left alone
    why = {w["label"]: {f["rule"]: f for f in w["findings"]} for w in summary["why"]}
    eager = why["eager/fp32"]["optimizer"]  # AdamW over 41 parameters, one by one
    assert eager["title"].startswith("optimizer-bound: optimizer.step() is ")
    default = why["default/fp32"]["optimizer"]
    assert any(line.startswith("default+opt/fp32 (its optimizer step compiled too) raced "
                               "default/fp32: optimizer ") for line in default["evidence"])
    md = (session / "summary.md").read_text()
    assert "### eager/fp32 (not compiled): what bounds its step" in md


def test_a_scripts_optimizer_compiled_alone(tuimon):
    proc, session = tuimon("run", "--headless", "--modes", "eager+opt", "--steps", "30", "--",
                           PY, str(SCRIPTS / "optimizer_heavy.py"), "--layers", "6",
                           env=ONE_THREAD, timeout=600)
    assert proc.returncode == 0, proc.stderr
    kinds = runs_of(session)[1]["eager+opt-script"]
    notes = [w["text"] for w in kinds.get("warning", [])]
    assert "tuimon compiles the optimizer's step too (AdamW, mode default)" in notes
    assert not any("torch.compile is disabled" in n for n in notes)  # not counted as the script's
    assert any(c.get("frame") == "step" for c in kinds["compile"]) and "graph_break" not in kinds
    steady = [s for s in kinds["step"] if s["phase"] == "steady" and not s.get("compile_ms")]
    assert steady and all(None not in s["ph"] for s in steady)
