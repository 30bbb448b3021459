"""tuimon try's GPU-only fixes (tf32, no-cudagraphs, reduce-overhead, max-autotune, the loader's
pin_memory, foreach's fused) against a fake CUDA: torch.cuda.is_available() patched, as a
script's hooks ask it (runner/script/fixes.py), and the parameters' device behind fused. Each
applies where CUDA is there and refuses ("CUDA only") where it is not; the compile modes are
checked with a spy (no kernel runs). The same fixes for real: the GPU programme's `try` stage
(bench/gpu/stages.py)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from test_tried import finding
from test_verdict import session, variant

from tuimon.analysis import diagnose, summarize, tried
from tuimon.report import try_text
from tuimon.runner import fix_defaults
from tuimon.runner.script import fixes as script_fixes
from tuimon.runner.script.compile_modes import CompileModes

GPU_ONLY = ("tf32", "no-cudagraphs", "reduce-overhead", "max-autotune")
MODES = {"no-cudagraphs": "max-autotune-no-cudagraphs", "reduce-overhead": "reduce-overhead",
         "max-autotune": "max-autotune"}


@pytest.fixture
def cuda(monkeypatch):
    """A fake CUDA for what the fixes ask; torch's flags and patched constructors put back."""
    flags = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
    classes = [c for c in (getattr(torch.optim, n) for n in dir(torch.optim))
               if isinstance(c, type) and "__init__" in c.__dict__]
    saved = {c: c.__dict__["__init__"] for c in [*classes, torch.utils.data.DataLoader]}

    def use(available: bool):
        monkeypatch.setattr(torch.cuda, "is_available", lambda: available)

    yield use
    torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = flags
    for cls, init in saved.items():
        cls.__init__ = init


def started(*names: str):
    said = []
    s = SimpleNamespace(fixes=names, axes=(), knobs=(), mode="default", precision="script")
    fx = script_fixes.start(s, lambda text, **fields: said.append((text, fields)))
    return fx, said


def compiled_mode(fx) -> str:
    """The mode a script's torch.compile(model) gets under the run's fixes (a spy compiles)."""
    calls = []
    modes = CompileModes(fx.mode, True, lambda text, **fields: None, fixes=fx)
    modes._orig_compile = lambda model, **kwargs: calls.append(kwargs) or model
    modes.compile_call(torch.nn.Linear(2, 2), {})
    return calls[0]["mode"]


@pytest.mark.parametrize("name", ["no-cudagraphs", "reduce-overhead", "max-autotune"])
def test_a_mode_fix_compiles_the_scripts_model_in_its_mode_on_cuda_and_refuses_without(cuda, name):
    cuda(True)
    fx, said = started(name)
    assert fx.on(name) and fx.mode == MODES[name] and compiled_mode(fx) == MODES[name]
    assert (f"fix {name}: compiled with mode={MODES[name]!r}", {"fix": name, "applied": True}) in said
    cuda(False)
    fx, said = started(name)
    assert not fx.on(name) and fx.mode == "default" and compiled_mode(fx) == "default"
    assert said == [(f"fix {name}: CUDA only", {"fix": name, "applied": False})]


def test_tf32_sets_torchs_flags_on_cuda_and_leaves_them_without(cuda):
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    cuda(False)
    _, said = started("tf32")
    assert said == [("fix tf32: CUDA only", {"fix": "tf32", "applied": False})]
    assert not torch.backends.cuda.matmul.allow_tf32 and not torch.backends.cudnn.allow_tf32
    cuda(True)
    _, said = started("tf32")
    assert torch.backends.cuda.matmul.allow_tf32 and torch.backends.cudnn.allow_tf32
    assert said[0][1] == {"fix": "tf32", "applied": True}


def test_the_loaders_pinned_memory_only_where_cuda_is_there(cuda):
    data = torch.utils.data.TensorDataset(torch.zeros(4, 2))
    cuda(False)
    started("loader")
    assert torch.utils.data.DataLoader(data).pin_memory is False
    cuda(True)
    started("loader")
    loader = torch.utils.data.DataLoader(data)
    assert loader.pin_memory is True and loader.persistent_workers
    assert torch.utils.data.DataLoader(data, pin_memory=False).pin_memory is False  # the code's own


def test_foreach_is_fused_for_parameters_on_a_gpu(cuda, monkeypatch):
    told = []
    fix_defaults.optimizer_defaults(lambda applied, text: told.append(text))
    model = torch.nn.Linear(4, 2)
    torch.optim.AdamW(model.parameters(), lr=1e-3)
    assert told[-1] == "AdamW made with foreach=True"  # on the CPU
    monkeypatch.setattr(fix_defaults, "_on_gpu", lambda params: True)  # the parameters' device, faked
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)  # fused AdamW runs on the CPU too
    assert told[-1] == "AdamW made with fused=True" and opt.defaults["fused"] is True


def test_the_plan_races_the_gpu_only_fixes_on_a_cuda_variant_and_refuses_them_on_the_cpu():
    """The findings that call for them, on a row whose device is cuda:0 and on a CPU row."""
    for device, raced in (("cuda:0", True), ("cpu", False)):
        evs = session(variant("eager", "fp32", 10.0, seed=1), variant("default", "fp32", 8.0,
                                                                        seed=2, compile_s=20))
        for e in evs:
            if e["type"] == "run_started":
                e["device"] = device
        s = summarize(evs)
        whys = diagnose(s)
        base = next(w for w in whys if w.run.startswith("default"))
        base.findings = [finding("cudagraphs.skipped"), finding("bound.launch", 1.0),
                         finding("bound.compute", 2.0)]
        plan = tried.plan(s, whys)
        gpu = {c.fix: c.cannot for c in plan.candidates if c.fix in GPU_ONLY}
        assert set(gpu) == set(GPU_ONLY)
        if raced:
            assert all(why is None for why in gpu.values()) and set(GPU_ONLY) <= set(plan.raced)
        else:
            assert set(gpu.values()) == {"CUDA only"} and not set(GPU_ONLY) & set(plan.raced)
            cannot = try_text.plan_lines(plan, Path("s"))[-1]
            assert cannot.startswith("  cannot try here: ") and "tf32 (CUDA only)" in cannot
