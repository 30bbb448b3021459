"""tuimon try's fixes as the child applies them (runner/fixes.py, runner/fix_defaults.py,
runner/script/fixes.py): the repeated block found on small module trees, each compile's
arguments (a spy stands in for torch.compile: no compile runs here), the constructor defaults
patched and put back, what the runner's notes say, and the parent's reading of them
(analysis/stats/apply.py). The real runs are in tests/e2e/test_fixes_runs.py."""

from __future__ import annotations

import functools

import pytest
import torch
from torch import nn

from tuimon import axes, events, fixes
from tuimon.analysis import RunStats
from tuimon.analysis.stats.apply import apply_run
from tuimon.runner import fix_defaults
from tuimon.runner.fixes import (
    Fixes,
    autocast_call,
    channels_last,
    compile_regions,
    inputs_channels_last,
    repeated_blocks,
)
from tuimon.runner.script.compile_modes import CompileModes
from tuimon.settings import RunSettings


# ---- small module trees ------------------------------------------------------------------------
class Block(nn.Module):
    def __init__(self, d=8):
        super().__init__()
        self.norm, self.fc = nn.LayerNorm(d), nn.Linear(d, d)

    def forward(self, x):
        return x + self.fc(self.norm(x))


class ViT(nn.Module):
    """timm's layout: a patch embedding, blocks in a Sequential, a norm and a head."""

    def __init__(self, depth=6):
        super().__init__()
        self.patch_embed = nn.Sequential(nn.Conv2d(3, 8, 4, stride=4), nn.Flatten(2))
        self.blocks = nn.Sequential(*[Block() for _ in range(depth)])
        self.norm, self.head = nn.LayerNorm(8), nn.Linear(8, 2)

    def forward(self, x):
        return self.head(self.norm(self.blocks(self.patch_embed(x).transpose(1, 2))).mean(1))


class Stage(nn.Module):
    def __init__(self, depth):
        super().__init__()
        self.blocks = nn.ModuleList(Block() for _ in range(depth))
        self.down = nn.Linear(8, 8)

    def forward(self, x):
        for b in self.blocks:
            x = b(x)
        return self.down(x)


class Swin(nn.Module):
    """Stages of blocks: both repeat; the stage is the outermost."""

    def __init__(self):
        super().__init__()
        self.stages = nn.ModuleList(Stage(d) for d in (2, 2, 6, 2))


def test_a_vit_like_stack_gives_its_blocks():
    model = ViT(depth=6)
    cls, blocks = repeated_blocks(model)
    assert cls is Block and blocks == list(model.blocks)


def test_nested_repeats_give_the_outermost_repeated_class():
    model = Swin()
    cls, blocks = repeated_blocks(model)
    assert cls is Stage and blocks == list(model.stages)


def test_nested_sequentials_give_the_inner_ones_never_the_model():
    model = nn.Sequential(*[nn.Sequential(nn.Linear(4, 4), nn.ReLU()) for _ in range(3)],
                          nn.Linear(4, 2))
    cls, blocks = repeated_blocks(model)
    assert cls is nn.Sequential and blocks == list(model)[:3] and model not in blocks


def test_layers_in_a_moduledict_and_torchs_own_blocks():
    class Titan(nn.Module):  # torchtitan keeps its layers in a ModuleDict
        def __init__(self):
            super().__init__()
            self.layers = nn.ModuleDict({str(i): Block() for i in range(3)})

    assert repeated_blocks(Titan())[0] is Block
    enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16), 3, enable_nested_tensor=False)
    cls, blocks = repeated_blocks(enc)
    assert cls is nn.TransformerEncoderLayer and len(blocks) == 3


def test_no_repeated_block():
    # Layers that repeat but have no parts of their own are no blocks (a Linear compiled
    # alone is no region); distinct classes do not repeat.
    assert repeated_blocks(nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 4), nn.ReLU())) \
        == (None, [])
    blocks = nn.ModuleList(type(f"B{i}", (Block,), {})() for i in range(4))
    assert repeated_blocks(nn.ModuleDict({"blocks": blocks})) == (None, [])
    assert repeated_blocks(nn.Linear(2, 2)) == (None, [])


def test_each_block_compiled_in_place_with_the_runs_arguments():
    calls = []

    def spy(fn, **kwargs):
        calls.append((fn, kwargs))
        return lambda *a, **k: ("compiled", fn)

    model = ViT(depth=4)
    compile_regions(list(model.blocks), spy, {"mode": "default", "dynamic": True})
    assert len(calls) == 4 and all(kw == {"mode": "default", "dynamic": True} for _, kw in calls)
    # A user's block: its own _call_impl, as Module.compile hands torch.compile.
    assert calls[0][0] == model.blocks[0]._call_impl
    assert model.blocks[2](torch.randn(1, 8))[0] == "compiled"
    assert model.patch_embed._compiled_call_impl is None  # outside the blocks: eager
    # A torch class's: one frame of ours per class, named for it, shared (one compile serves all).
    calls.clear()
    enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16), 2, enable_nested_tensor=False)
    compile_regions(list(enc.layers), spy, {"mode": "default"})
    (a, _), (b, _) = calls
    assert isinstance(a, functools.partial) and a.func is b.func
    assert a.func.__code__.co_name == "TransformerEncoderLayer" and a.args == (enc.layers[0],)


# ---- one run's fixes ---------------------------------------------------------------------------
def run_fixes(names, mode="default", precision="fp32", on_cuda=False, is_script=False):
    said = []
    fx = Fixes(names, lambda text, **f: said.append((text, f)), mode=mode, precision=precision,
               on_cuda=on_cuda, is_script=is_script)
    return fx, said


def test_what_cannot_apply_is_said_at_once_and_changes_nothing():
    fx, said = run_fixes(("tf32", "regional", "amp", "opt", "channels-last"), mode="eager",
                         precision="amp", is_script=True)
    assert [f["fix"] for _, f in said] == ["tf32", "regional", "amp", "opt", "channels-last"]
    assert [t.split(": ", 1)[1] for t, _ in said] == [
        "CUDA only", "a compiled variant's only", "the variant's precision is amp already",
        "a compiled variant's only", "recipes only"]
    assert not any(f["applied"] for _, f in said)
    assert (fx.mode, fx.precision) == ("eager", "amp") and not fx.on("regional")


def test_the_variant_a_runs_fixes_make():
    assert fixes.variant_under("default", "fp32", ("max-autotune", "opt"), on_cuda=True,
                               is_script=False) == ("max-autotune+opt", "fp32")
    # CUDA only: on the CPU the mode stays the variant's.
    assert fixes.variant_under("default", "fp32", ("max-autotune",), on_cuda=False,
                               is_script=False) == ("default", "fp32")
    assert fixes.variant_under("default", "fp32", ("amp",), on_cuda=False,
                               is_script=False) == ("default", "amp")
    assert fixes.variant_under("default", "script", ("amp",), on_cuda=False,
                               is_script=True) == ("default", "script")  # the hooks autocast
    fx, said = run_fixes(("no-cudagraphs",), mode="max-autotune-no-cudagraphs", on_cuda=True)
    assert said[0][0] == "fix no-cudagraphs: the variant's mode is max-autotune-no-cudagraphs already"


def test_a_compile_under_mode_and_dynamic_fixes():
    """The mode substitution, tested with a spy (max-autotune never runs on this CPU)."""
    calls = []
    fx, said = run_fixes(("max-autotune", "dynamic"), on_cuda=True)
    assert fx.mode == "max-autotune"
    model = nn.Linear(2, 2)
    out = fx.compile_model(model, lambda m, **kw: calls.append(kw) or "whole",
                           fx.compile_kwargs({"mode": fx.mode}))
    assert out == "whole" and calls == [{"mode": "max-autotune", "dynamic": True}]
    assert [(t, f["applied"]) for t, f in said] == [
        ("fix max-autotune: compiled with mode='max-autotune'", True),
        ("fix dynamic: compiled with dynamic=True, duck sizing off", True)]
    fx.compile_kwargs({"mode": fx.mode})  # a second compile: said once
    assert len(said) == 2


def test_regional_where_there_is_no_block_compiles_whole_and_says_why():
    fx, said = run_fixes(("regional",))
    calls = []
    out = fx.compile_model(nn.Sequential(nn.Linear(2, 2)), lambda m, **kw: calls.append(m) or "c",
                           {"mode": "default"})
    assert out == "c" and len(calls) == 1
    assert said == [("fix regional: no repeated block in Sequential: the model compiled whole",
                     {"fix": "regional", "applied": False})]
    fx.settle({"regional": "never said"})  # said already: nothing more
    assert len(said) == 1


def test_regional_compiles_the_blocks_and_hands_back_the_model():
    fx, said = run_fixes(("regional",))
    model, calls = ViT(depth=3), []
    out = fx.compile_model(model, lambda fn, **kw: calls.append(kw) or (lambda *a: None),
                           {"mode": "default"})
    assert out is model and len(calls) == 3
    assert said[0][0] == "fix regional: compiled 3 blocks of Block one by one, not the model whole"


def test_settle_says_each_fix_nothing_was_said_of():
    fx, said = run_fixes(("loader", "foreach"), mode="eager", is_script=True)
    fx.tell("foreach", True, "AdamW made with foreach=True")
    fx.settle({"loader": "no DataLoader was made"})
    assert said[-1] == ("fix loader: no DataLoader was made", {"fix": "loader", "applied": False})
    assert fx.settled == {"foreach": True, "loader": False}


def test_a_scripts_compile_under_regional_and_dynamic():
    """CompileModes (no torch.compile patched: its original is a spy) under the fixes."""
    fx, said = run_fixes(("regional", "dynamic"), is_script=True)
    notes = []
    modes = CompileModes(fx.mode, True, lambda text, **f: notes.append(text), fixes=fx)
    calls = []
    modes._orig_compile = lambda fn=None, **kw: calls.append((fn, kw)) or (lambda *a, **k: None)
    model = ViT(depth=2)
    assert modes.compile_call(model, {"mode": "max-autotune"}) is model  # the blocks, in place
    assert [kw for _, kw in calls] == [{"mode": "default", "dynamic": True}] * 2
    calls.clear()
    modes.compile_call(None, {})  # @torch.compile(...) over a function
    assert calls == [(None, {"mode": "default", "dynamic": True})]
    assert said[-1][0] == "fix regional: the script compiles a function, not a module"


def test_tuimons_own_compile_of_the_blocks_waits_for_the_first_call_to_end():
    fx, said = run_fixes(("regional",), is_script=True)
    modes = CompileModes(fx.mode, True, lambda text, **f: None, fixes=fx)
    compiled = []
    modes._orig_compile = lambda fn, **kw: compiled.append(fn) or fn
    model = ViT(depth=2)
    modes.trained._compile(model, "the module the optimizer trains")
    assert compiled == []  # its first call runs eager, whole
    model(torch.randn(1, 3, 8, 8))
    assert len(compiled) == 2 and model._compiled_call_impl is None
    assert not model._forward_hooks  # the one-shot hook is gone
    model(torch.randn(1, 3, 8, 8))
    assert len(compiled) == 2


# ---- constructor defaults ----------------------------------------------------------------------
@pytest.fixture
def restored():
    """The constructors this test patches, put back after it (a child never needs this)."""
    classes = [getattr(torch.optim, n) for n in dir(torch.optim)]
    classes = [c for c in classes if isinstance(c, type) and "__init__" in c.__dict__]
    saved = {c: c.__dict__["__init__"] for c in [*classes, torch.utils.data.DataLoader]}
    yield
    for cls, init in saved.items():
        cls.__init__ = init


def test_optimizers_get_foreach_where_the_code_passed_neither(restored):
    told = []
    patched = fix_defaults.optimizer_defaults(lambda applied, text: told.append((applied, text)))
    assert {"SGD", "Adam", "AdamW"} <= set(patched) and "LBFGS" not in patched
    model = nn.Linear(4, 2)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)  # a generator, read whole
    assert opt.defaults["foreach"] is True and len(opt.param_groups[0]["params"]) == 2
    assert told == [(True, "AdamW made with foreach=True")]  # AdamW's Adam.__init__ said nothing
    assert torch.optim.SGD(model.parameters(), lr=0.1, foreach=False).defaults["foreach"] is False
    assert torch.optim.Adam(model.parameters(), fused=False).defaults["foreach"] is None
    assert told[-1] == (False, "Adam given fused by the code: left as it is")
    torch.optim.SGD(model.parameters(), lr=0.1, differentiable=True)
    assert told[-1] == (False, "SGD(differentiable=True) takes neither foreach nor fused")
    torch.optim.LBFGS(model.parameters())  # no foreach: left alone, nothing said
    assert len(told) == 4


def test_on_a_gpu_an_optimizer_that_takes_fused_gets_fused(restored, monkeypatch):
    monkeypatch.setattr(fix_defaults, "_on_gpu", lambda params: True)
    told = []
    fix_defaults.optimizer_defaults(lambda applied, text: told.append(text))
    model = nn.Linear(4, 2)
    opt = torch.optim.AdamW([{"params": model.parameters()}], lr=1e-3)  # CPU has a fused AdamW
    assert opt.defaults["fused"] is True and opt.defaults["foreach"] is None
    assert torch.optim.Adamax(model.parameters()).defaults["foreach"] is True  # no fused
    assert told == ["AdamW made with fused=True", "Adamax made with foreach=True"]
    monkeypatch.undo()
    assert fix_defaults._on_gpu([("w", torch.zeros(1))]) is False


def test_dataloaders_with_no_workers_get_them(restored, monkeypatch):
    monkeypatch.setattr("os.sched_getaffinity", lambda pid: {0, 1})
    told = []
    assert fix_defaults.loader_defaults(lambda applied, text: told.append((applied, text)),
                                        pin=False) == 2
    data = torch.utils.data.TensorDataset(torch.zeros(8, 2))
    loader = torch.utils.data.DataLoader(data, batch_size=4, shuffle=True)
    assert (loader.num_workers, loader.persistent_workers, loader.pin_memory) == (2, True, False)
    assert told == [(True, "a DataLoader over TensorDataset made with num_workers=2, "
                     "persistent_workers=True (2 of the cores this process may use)")]
    assert torch.utils.data.DataLoader(data, 4, False, None, None, 1).num_workers == 1  # positional
    assert told[-1] == (False, "a DataLoader given num_workers=1 by the code: left as it is")

    class Stream(torch.utils.data.IterableDataset):
        def __iter__(self):
            return iter(range(3))

    assert torch.utils.data.DataLoader(Stream()).num_workers == 0
    assert "IterableDataset" in told[-1][1] and not told[-1][0]


def test_pinned_memory_where_cuda_is_there(restored):
    fix_defaults.loader_defaults(lambda applied, text: None, pin=True)
    data = torch.utils.data.TensorDataset(torch.zeros(8, 2))
    assert torch.utils.data.DataLoader(data).pin_memory is True
    assert torch.utils.data.DataLoader(data, pin_memory=False).pin_memory is False


def test_workers_sized_to_the_cores(monkeypatch):
    for cores, n in ((1, 1), (2, 2), (6, 6), (32, 8)):
        monkeypatch.setattr("os.sched_getaffinity", lambda pid, c=cores: set(range(c)))
        assert fix_defaults.workers() == n


# ---- autocast, channels_last -------------------------------------------------------------------
def test_autocast_around_a_call_with_its_outputs_back_to_fp32():
    seen = []
    layer = nn.Linear(4, 4)

    def call(x):
        seen.append(torch.is_autocast_enabled("cpu"))
        out = layer(x)
        return {"out": out, "low": out.dtype, "n": 3}

    got = autocast_call(call, "cpu", torch.bfloat16)(torch.randn(2, 4))
    assert seen == [True] and got["low"] == torch.bfloat16 and got["out"].dtype == torch.float32
    assert got["n"] == 3 and not torch.is_autocast_enabled("cpu")


def test_channels_last_only_where_there_is_a_convolution():
    conv = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU())
    assert channels_last(conv) == 1
    assert conv[0].weight.is_contiguous(memory_format=torch.channels_last)
    assert channels_last(nn.Linear(2, 2)) == 0
    x = inputs_channels_last(torch.randn(2, 3, 8, 8))
    assert x.is_contiguous(memory_format=torch.channels_last)
    flat = torch.randn(2, 3)
    assert inputs_channels_last(flat) is flat


# ---- the fix axis, and the parent's reading ----------------------------------------------------
def test_the_fix_axis_is_the_runs_fixes_never_a_knob():
    s = RunSettings.make(axes=(("width", "8"), ("fix", "regional+dynamic")), fixes=("amp",))
    assert fixes.asked(s.fixes, s.axes) == ("regional", "dynamic")  # each variant its own
    assert fixes.asked(("amp",), ()) == ("amp",)
    assert fixes.asked((), (("fix", "none"),)) == ()
    assert fixes.asked((), (), (("fix", "loader"),)) == ("loader",)  # --set fix=loader: a knob
    assert fixes.without_axis((("fix", "loader"), ("bs", "4"))) == (("bs", "4"),)
    assert fixes.without_axis(s.axes) == (("width", "8"),)
    cmd, env = axes.for_script(["python", "t.py", "--w", "{width}"], dict(s.axes))
    assert cmd == ["python", "t.py", "--w", "8"] and env == {}
    assert axes.for_script(["python", "t.py"], {"fix": "loader"}) == (["python", "t.py"], {})


def test_what_became_of_each_runs_fixes():
    def note(run, name, applied, text):
        return events.make(events.WARNING, run, note=True, fix=name, applied=applied,
                           text=f"fix {name}: {text}")

    evs = [
        # a script's hooks may say what came of a fix before its run_started
        note("a", "loader", False, "a DataLoader given num_workers=4 by the code: left as it is"),
        events.make(events.RUN_STARTED, "a", fixes=["regional", "loader", "dynamic"]),
        note("a", "regional", False, "no repeated block in Net: the model compiled whole"),
        note("a", "loader", False, "a DataLoader given num_workers=4 by the code: left as it is"),
        note("a", "loader", True, "a DataLoader over X made with num_workers=2"),
        events.make(events.WARNING, "a", note=True, text="an ordinary note"),
        events.make(events.RUN_STARTED, "b"),
    ]
    rows = {}
    for e in evs:
        apply_run(rows.setdefault(e["run"], RunStats(e["run"], "default", "fp32")), e)
    assert rows["b"].fixes == {}
    a = rows["a"].fixes
    assert list(a) == ["regional", "loader", "dynamic"]
    assert a["regional"] == {"applied": False, "text": "no repeated block in Net: the model compiled whole"}
    assert a["loader"] == {"applied": True, "text": "a DataLoader over X made with num_workers=2"}
    assert a["dynamic"] == {"applied": False, "text": None}


def test_a_fix_said_before_its_run_started_stays_said():
    """A script's hooks apply regional at the trained module's first call, which may come before
    the run's run_started is folded (nanoGPT under tuimon try)."""
    evs = [events.make(events.WARNING, "s", note=True, fix="regional", applied=True,
                       text="fix regional: compiled 4 blocks of Block one by one"),
           events.make(events.RUN_STARTED, "s", fixes=["regional"])]
    row = RunStats("s", "default", "script")
    for e in evs:
        apply_run(row, e)
    assert row.fixes == {"regional": {"applied": True, "text": "compiled 4 blocks of Block one by one"}}
