"""A model a double backward runs through (a PINN's derivatives, a gradient penalty) cannot be
compiled: tuimon leaves it eager, ``--compile-module`` too, and the verdict and Why say so, with
eager's time, instead of asking for the very compile that cannot work (pinn_burgers, N6)."""

from __future__ import annotations

import torch
from said import worded
from test_verdict import variant

from tuimon import events
from tuimon.analysis.stats import summarize
from tuimon.report.verdict_text import line
from tuimon.runner.script.compile_modes import CompileModes

PINN = "Sequential cannot be compiled: a double backward (torch.autograd.grad with create_graph"


def _double_backward_session():
    evs = [*variant("eager", "script", 56.5, seed=1, processes=1),
           *variant("default", "script", 58.0, seed=2, processes=1)]
    evs.append(events.make(events.ANATOMY, "default-script", steps=30, ends_at="backward",
                           optimizers=[{"optimizer": "LBFGS", "params": 3441, "steps": 0,
                                        "module": "Sequential", "compiled": "double-backward",
                                        "beside": None, "lead": False, "every": None}]))
    return summarize(evs)


def test_the_verdict_says_the_model_cannot_be_compiled_and_what_eager_measured():
    summary = _double_backward_session()
    v = summary.verdict
    assert v.code == "nothing_compiled"
    said = line(v)
    assert said.startswith(f"Verdict: no answer: nothing was compiled in default/script — {PINN}")
    assert "which torch.compile does not support; eager/script measured 5" in said
    assert said.endswith(" ms a step.")
    assert "--compile-module" not in said and "call torch.compile" not in said
    (why,) = [w for w in worded(summary) if w.compiled]
    (f,) = why.findings
    assert PINN in f.title
    assert f.advice[0].startswith("keep it eager: torch.compile cannot differentiate a graph twice")


def test_compile_module_leaves_a_module_a_double_backward_reaches_eager_and_says_so():
    said = []
    modes = CompileModes("default", True, lambda text, **fields: said.append((text, fields)),
                         module="Sequential")
    modes._orig_compile = lambda fn, **kw: fn  # compiled "in place": the slot is filled
    modes.trained.install()
    net = torch.nn.Sequential(torch.nn.Linear(2, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))
    x = torch.randn(4, 2, requires_grad=True)
    u = net(x)
    modes.trained.double_backward(u)  # hooks.py: torch.autograd.grad(u, x, create_graph=True)
    (du,) = torch.autograd.grad(u.sum(), x, create_graph=True)
    net(x)  # called again in the same step: still eager (compiled at its first call, it failed)
    assert net._compiled_call_impl is None
    modes.trained.first_step(optimizers=0)
    assert net._compiled_call_impl is None
    assert [text for text, _ in said] == [
        "--compile-module Sequential: Sequential left eager: a double backward (torch.autograd.grad "
        "with create_graph) reaches it, which torch.compile does not support"]
    assert not any(fields.get("uncompiled") for _, fields in said)


def test_compile_module_compiles_its_module_as_the_first_step_ends():
    said = []
    modes = CompileModes("default", True, lambda text, **fields: said.append(text), module="Linear")
    modes._orig_compile = lambda fn, **kw: fn
    modes.trained.install()
    net = torch.nn.Linear(2, 1)
    net(torch.randn(4, 2)).sum().backward()
    modes.trained.first_step(optimizers=0)
    assert net._compiled_call_impl is not None and modes.trained.done
    assert any("tuimon compiled Linear (--compile-module Linear)" in t for t in said)
