"""Issue 35, FLOPs in process (torch on the CPU): the counted FLOPs of known models equal their
analytic count, the phases add up to the step, the extra step is undone exactly, the measured
peak holds still across runs, and every shipped recipe's MFU against it is under 100 %."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest
import torch
from torch import nn

from tuimon import recipe as contract
from tuimon.envvars import PEAK_CACHE
from tuimon.runner import peak_bench
from tuimon.runner.flops import backward_of, count_step
from tuimon.runner.peak_bench import peak

RECIPES = sorted((__import__("conftest").RECIPES).glob("*.py"))


def linear_stack(widths=(64, 128, 256, 10)) -> nn.Sequential:
    layers = []
    for a, b in zip(widths, widths[1:], strict=False):
        layers += [nn.Linear(a, b), nn.ReLU()]
    return nn.Sequential(*layers[:-1])


def test_a_linear_stacks_flops_are_the_analytic_count():
    torch.manual_seed(0)
    widths, n = (64, 128, 256, 10), 32
    model = linear_stack(widths)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(n, widths[0]), torch.randint(0, 10, (n,))
    got = count_step(model, opt, lambda: nn.functional.cross_entropy(model(x), y), backward_of)
    mms = [2 * n * a * b for a, b in zip(widths, widths[1:], strict=False)]
    assert got["forward"] == sum(mms)
    # backward: each layer's weight gradient, and each input gradient but the first layer's
    # (the batch needs none)
    assert got["backward"] == sum(mms) + sum(mms[1:])
    assert got["optimizer"] == 0  # SGD's update: element-wise, no FLOP formula
    assert got["step"] == got["forward"] + got["backward"] + got["optimizer"]
    assert got["precision"] == "fp32" and got["counted_on"] == "eager"


def test_a_small_conv_nets_flops_are_the_analytic_count():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 16, 3, stride=2,
                          padding=1), nn.ReLU(), nn.Flatten(), nn.Linear(16 * 8 * 8, 10))
    opt = torch.optim.AdamW(model.parameters())
    x, y = torch.randn(4, 3, 16, 16), torch.randint(0, 10, (4,))
    got = count_step(model, opt, lambda: nn.functional.cross_entropy(model(x), y), backward_of)
    conv1 = 2 * 4 * 16 * 16 * 8 * 3 * 3 * 3  # out elements × in channels × kernel, ×2 (mul-add)
    conv2 = 2 * 4 * 8 * 8 * 16 * 8 * 3 * 3
    lin = 2 * 4 * 1024 * 10
    assert got["forward"] == conv1 + conv2 + lin
    # backward: weight gradients of all three, input gradients of conv2 and the linear
    assert got["backward"] == conv1 + 2 * conv2 + 2 * lin
    assert got["step"] == sum(got[p] for p in ("forward", "backward", "optimizer"))


def test_a_depthwise_convs_backward_is_twice_its_forward():
    """ConvNeXt's 7×7 depthwise convs: torch's own backward formula counts the weight gradient as
    a dense conv over the batch (65× the forward for 64 channels); tuimon's counts it once."""
    torch.manual_seed(0)
    c = 64
    conv = nn.Conv2d(c, c, 7, padding=3, groups=c, bias=False)
    x = torch.randn(2, c, 8, 8, requires_grad=True)
    got = count_step(conv, None, lambda: conv(x).sum(), backward_of)
    forward = 2 * 2 * 8 * 8 * c * 7 * 7  # each output element: 49 mul-adds of its own channel
    assert got["forward"] == forward and got["backward"] == 2 * forward


def test_bf16_autocast_reads_bf16_and_counts_the_same():
    torch.manual_seed(0)
    model = linear_stack()
    x, y = torch.randn(32, 64), torch.randint(0, 10, (32,))

    def forward():
        with torch.autocast("cpu", dtype=torch.bfloat16):
            return nn.functional.cross_entropy(model(x), y)

    got = count_step(model, None, forward, backward_of)
    assert got["precision"] == "bf16" and got["optimizer"] is None
    assert got["step"] == got["forward"] + got["backward"]


def test_the_extra_step_is_undone_exactly():
    """Parameters, buffers, gradients, an Adam's state, every generator: as before the count, so
    the measured steps train from the same state (loss parity between variants holds)."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.BatchNorm1d(32), nn.Dropout(0.5), nn.Linear(32, 4))
    opt = torch.optim.Adam(model.parameters(), lr=0.1)
    x, y = torch.randn(8, 16), torch.randint(0, 4, (8,))
    nn.functional.cross_entropy(model(x), y).backward()
    opt.step()  # an Adam with state already
    before = {k: v.clone() for k, v in model.state_dict().items()}
    grads = [p.grad.clone() for p in model.parameters()]
    state = {k: (v.clone() if torch.is_tensor(v) else v) for k, v in opt.state[model[0].weight].items()}
    rng = torch.get_rng_state()
    count_step(model, opt, lambda: nn.functional.cross_entropy(model(x), y), backward_of)
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())
    assert all(torch.equal(g, p.grad) for g, p in zip(grads, model.parameters(), strict=True))
    assert all(torch.equal(state[k], v) if torch.is_tensor(v) else state[k] == v
               for k, v in opt.state[model[0].weight].items())
    assert torch.equal(rng, torch.get_rng_state())
    # and the next step trains exactly as it would have
    a = nn.functional.cross_entropy(model(x), y)
    torch.set_rng_state(rng)
    assert torch.equal(a, nn.functional.cross_entropy(model(x), y))


# serial: a peak is the machine's, measured beside the other xdist worker it is not (CI read fp32
# 89, 92 and 103 GFLOP/s while a compile ran on the sibling core: one core's GEMM shares the
# other's execution units and clock), so it runs in the quiet pass (tests/conftest.py)
@pytest.mark.serial
def test_the_measured_peak_is_stable_within_10_percent_across_three_runs(tmp_path):
    env = {**os.environ, PEAK_CACHE: str(tmp_path / "peaks.json")}
    found = []
    for _ in range(3):
        out = subprocess.run([sys.executable, "-m", "tuimon.runner.peak_bench", "--fresh"],
                             capture_output=True, text=True, env=env, timeout=120, check=True)
        found.append(json.loads(out.stdout)["peaks"])
    for dtype in ("fp32", "bf16"):
        values = [f[dtype] for f in found]
        assert max(values) <= 1.1 * min(values), (dtype, values)
    kept = json.loads((tmp_path / "peaks.json").read_text())
    assert len(kept) == 1  # one entry a machine, device, torch and threads: measured again, replaced


def _recipe(path):
    module = contract.load_module(str(path))
    sizes = contract.resolve_defaults(getattr(module, "DEFAULTS", None), "cpu")
    cfg = contract.Config(device="cpu", batch_size=sizes["batch_size"], image_size=sizes["image_size"],
                          seed=0, extra=contract.Extra(()), mode="eager", precision="fp32")
    torch.manual_seed(0)
    return contract.validate(module.build(cfg), str(path))


@pytest.mark.parametrize("path", RECIPES, ids=lambda p: p.stem)
def test_every_shipped_recipe_runs_under_100_percent_of_the_measured_peak(path):
    """At its CPU defaults (its real shapes here), eager fp32: the counted FLOPs of a step over
    the faster of two plain steps stay under this machine's measured fp32 peak."""
    r = _recipe(path)
    r.model.train()
    batch = r.batches[0] if isinstance(r.batches, (list, tuple)) else next(iter(r.batches))
    inputs, targets = batch

    def forward():
        if r.forward_loss is not None:
            return r.forward_loss(r.model, inputs, targets)
        return r.loss_fn(r.model(inputs), targets)

    counted = count_step(r.model, r.optimizer, forward, backward_of)
    assert counted["step"] > 0 and counted["forward"] > 0 and counted["backward"] > counted["forward"] / 2
    best = float("inf")
    for _ in range(2):
        t0 = time.perf_counter()
        loss = forward()
        loss.backward()
        r.optimizer.step()
        r.optimizer.zero_grad(set_to_none=True)
        best = min(best, time.perf_counter() - t0)
    measured = peak(torch, "cpu")["peaks"]["fp32"]
    mfu = counted["step"] / best / measured
    print(f"{path.stem}: {counted['step']:.4g} FLOP a step, {best * 1000:.0f} ms, "
          f"{counted['step'] / best:.3g} FLOP/s, MFU {mfu:.1%} of {measured:.3g}")
    assert 0 < mfu < 1.0, (path.stem, counted["step"], best, measured)


def test_the_precision_a_gpus_flops_ran_in():
    """CUDA's paths without a GPU: fp32 matmuls read tf32 where CUDA may use TF32 (torchtitan#668
    took the TF32 peak for a bf16 run, and the other way round), fp8 from _scaled_mm's inputs."""
    from tuimon.runner.flops import precision_of

    before = torch.backends.cuda.matmul.allow_tf32, torch.get_float32_matmul_precision()
    try:
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.set_float32_matmul_precision("highest")
        assert precision_of({"float32": 10}, on_cuda=True) == "fp32"
        torch.set_float32_matmul_precision("high")
        assert precision_of({"float32": 10}, on_cuda=True) == "tf32"
        assert precision_of({"float32": 10}, on_cuda=False) == "fp32"  # a CPU has no TF32
    finally:
        torch.backends.cuda.matmul.allow_tf32 = before[0]
        torch.set_float32_matmul_precision(before[1])
    assert precision_of({"float8_e4m3fn": 10, "bfloat16": 3}, on_cuda=True) == "fp8"
    assert precision_of({"bfloat16": 10, "float32": 3}, on_cuda=True) == "bf16"
    assert precision_of({}, on_cuda=True) is None


def test_measuring_the_peak_inside_a_run_leaves_its_random_streams_alone(tmp_path, monkeypatch):
    """The first run on a machine measures the peak in its own process (runner/flop_event.py):
    a draw from the global generator there changed a script's next shuffles and dropout masks."""
    from tuimon.runner import flop_event

    monkeypatch.setenv(PEAK_CACHE, str(tmp_path / "peaks.json"))
    said = []

    class Emitter:
        def emit_now(self, kind, **fields):
            said.append((kind, fields))

    # and a recipe's batches as a shuffling DataLoader: the count's fresh iterator draws seeds
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.arange(64.0)),
                                         batch_size=8, shuffle=True)

    def count():
        flop_event.first_batch(loader)
        return {"step": 1.0}

    torch.manual_seed(1234)
    expected = torch.rand(8)
    torch.manual_seed(1234)
    flop_event.emit(Emitter(), "cpu", count)
    assert said[0][1]["peak"]["cached"] is False  # measured here, not read
    assert torch.equal(torch.rand(8), expected)
    torch.manual_seed(1234)  # and the GEMMs alone, outside the guard around them
    peak_bench.measure(torch, "cpu")
    assert torch.equal(torch.rand(8), expected)
