"""Issue 35 on a real GPU (the GPU programme's check stage, bench/gpu/stages.py; skipped without
CUDA): the measured GEMM peak per dtype against the datasheet's for a device in tuimon's table
(a measured peak above the datasheet's is a wrong entry; far below, a wrong precision), the
precision a run's FLOPs ran in read off its ops (bf16 under amp, tf32 when allowed), and MFU
against both peaks under 100 % on a real recipe."""

from __future__ import annotations

import json
import sys

import pytest
from conftest import RECIPES

from tuimon.peaks import datasheet_peak


@pytest.fixture
def torch():
    torch = pytest.importorskip("torch")  # here, not at collection: the rest of the suite needs no GPU
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    return torch


def test_the_measured_peak_against_the_datasheet(torch, tmp_path, monkeypatch):
    from tuimon.runner.peak_bench import measure

    found = measure(torch, "cuda:0")["peaks"]
    name = torch.cuda.get_device_name(0)
    assert {"fp32", "tf32", "fp16"} <= set(found), found
    assert found["tf32"] > found["fp32"] and found["fp16"] > found["tf32"], found
    print(json.dumps({"device": name, "measured": found}))
    for precision, flop_s in found.items():
        table, sheet, lookup = datasheet_peak(name, precision)
        if lookup != "found":
            continue
        # a GEMM reaches 50-95 % of a tensor-core datasheet peak; never above it (5 % for boost)
        assert flop_s <= 1.05 * sheet, (table, precision, flop_s, sheet)
        assert flop_s >= 0.3 * sheet, (table, precision, flop_s, sheet)


def test_the_peak_measured_inside_a_run_leaves_its_memory_and_random_streams(torch, tmp_path,
                                                                            monkeypatch):
    """The first run on a machine measures the peak in its own process: its CUDA generator goes
    on as before, and the GEMMs' blocks go back to the device (its VRAM as its siblings')."""
    from tuimon.envvars import PEAK_CACHE
    from tuimon.runner import flop_event

    monkeypatch.setenv(PEAK_CACHE, str(tmp_path / "peaks.json"))
    torch.cuda.init()
    torch.cuda.manual_seed_all(7)
    expected = torch.rand(8, device="cuda")
    torch.cuda.manual_seed_all(7)
    reserved = torch.cuda.memory_reserved(0)
    said = []

    class Emitter:
        def emit_now(self, kind, **fields):
            said.append(fields)

    flop_event.emit(Emitter(), "cuda:0", lambda: {"step": 1.0})
    assert said[0]["peak"]["cached"] is False
    assert torch.equal(torch.rand(8, device="cuda"), expected)
    assert torch.cuda.memory_reserved(0) <= reserved + (64 << 20), (reserved, torch.cuda.memory_reserved(0))


def test_precision_read_off_the_ops(torch):
    from torch import nn

    from tuimon.runner.flops import backward_of, count_step

    model = nn.Linear(256, 256).cuda()
    x = torch.randn(64, 256, device="cuda")

    def forward(dtype=None):
        if dtype is None:
            return model(x).sum()
        with torch.autocast("cuda", dtype=dtype):
            return model(x).float().sum()

    assert count_step(model, None, lambda: forward(torch.bfloat16), backward_of,
                      on_cuda=True)["precision"] == "bf16"
    before = torch.backends.cuda.matmul.allow_tf32
    try:
        torch.backends.cuda.matmul.allow_tf32 = False
        assert count_step(model, None, forward, backward_of, on_cuda=True)["precision"] == "fp32"
        torch.backends.cuda.matmul.allow_tf32 = True
        assert count_step(model, None, forward, backward_of, on_cuda=True)["precision"] == "tf32"
    finally:
        torch.backends.cuda.matmul.allow_tf32 = before


def test_a_gpu_session_has_mfu_against_both_peaks(torch, tuimon):
    proc, session = tuimon(str(RECIPES / "swin_t.py"), "--headless", "--device", "cuda",
                           "--precision", "amp", "--modes", "eager", "--steps", "60",
                           "--no-auto-capture", timeout=400)
    assert proc.returncode == 0, proc.stderr[-2000:]
    f = json.loads((session / "summary.json").read_text())["runs"][0]["flops"]
    print(json.dumps(f, default=str), file=sys.stderr)
    assert f["precision"] in ("bf16", "fp16") and f["step"]["flops"] > 0
    assert f["peak_measured"] > 0 and 0 < f["step"]["mfu_measured"] < 1
    if f["peak_lookup"] == "found":
        assert f["mfu_basis"] == "both" and 0 < f["step"]["mfu_datasheet"] < 1
    else:
        assert f["mfu_basis"] in ("measured-unknown-device", "measured-no-precision")
