"""`tuimon doctor`: the real command on this machine, and the GPU lines against the fake NVML.

The real runs are in tests/e2e/test_doctor_runs.py."""

from __future__ import annotations

from pathlib import Path

from tests import fake_pynvml as fake
from tuimon.cli import doctor
from tuimon.runner import torch_facts

ROOT = Path(__file__).resolve().parents[2]


def test_gpu_lines_through_the_probes_nvml_wrapper():
    nv = fake.make([fake.FakeDevice(), fake.FakeDevice(name="NVIDIA A100-SXM4-40GB",
                                                        uuid="GPU-aaaa", mem_total=40 * 2**30)])
    # the shapes a real H100 box answered with (nvidia-ml-py 13.610): a str, and 1000*major+10*minor
    nv.nvmlSystemGetDriverVersion = lambda: "580.159.04"
    nv.nvmlSystemGetCudaDriverVersion = lambda: 13000
    r = doctor.nvml_report(nv)
    assert r["available"] and r["reason"] is None
    assert r["driver"] == "580.159.04" and r["cuda_driver"] == "13.0"
    assert [(d["name"], d["memory"]) for d in r["devices"]] == [
        ("NVIDIA H100 80GB HBM3", 80 * 2**30), ("NVIDIA A100-SXM4-40GB", 40 * 2**30)]
    lines = dict(doctor.rows(_report(nvml=r)))
    assert lines["NVML"] == "works: driver 580.159.04, CUDA driver 13.0, 2 GPU(s)"
    assert lines["GPU 1"] == "NVIDIA A100-SXM4-40GB, 40.0 GiB, GPU-aaaa"


def test_cudnn_versions_as_torch_packs_them():
    assert torch_facts._cudnn_text(91900) == "9.19.0"  # cuDNN 9: major*10000 + minor*100 + patch
    assert torch_facts._cudnn_text(92400) == "9.24.0"
    assert torch_facts._cudnn_text(8902) == "8.9.2"  # cuDNN 8: major*1000 + minor*100 + patch
    assert torch_facts._cudnn_text(None) is None


def test_nvml_failures_are_values():
    no_driver = doctor.nvml_report(fake.make(init_error=fake.NVML_ERROR_DRIVER_NOT_LOADED))
    assert not no_driver["available"] and "Driver Not Loaded" in no_driver["reason"]
    old = doctor.nvml_report(fake.make([fake.FakeDevice()]))  # no driver-version functions
    assert old["available"] and old["driver"] is None and old["cuda_driver"] is None
    assert "driver n/a" in dict(doctor.rows(_report(nvml=old)))["NVML"]


def test_torch_that_cannot_be_asked_is_a_line():
    lines = dict(doctor.rows(_report(torch={"ok": False, "error": "import torch failed: OSError: x"})))
    assert lines["torch says"] == "import torch failed: OSError: x"


def test_cache_states(tmp_path):
    cache = tmp_path / "inductor"
    assert doctor.cache_report(cache)["state"] == "absent"
    (cache / "locks").mkdir(parents=True)
    (cache / "ab").mkdir()
    (cache / "ab" / "kernel.cpp").write_text("x" * 100)
    cold = doctor.cache_report(cache)
    assert cold["state"] == "cold" and cold["files"] == 1 and cold["size"] == 100
    (cache / "fxgraph" / "xj" / "fxjkey").mkdir(parents=True)
    (cache / "fxgraph" / "xj" / "fxjkey" / "entry").write_bytes(b"y" * 20)
    warm = doctor.cache_report(cache)
    assert warm["state"] == "warm" and warm["fx_graphs"] == 1 and warm["size"] == 120


def test_sessions_not_writable(tmp_path):
    target = tmp_path / "file"
    target.write_text("")
    r = doctor.sessions_report(str(target))
    assert not r["writable"] and r["why_not"] == "exists and is not a directory"


def _report(**over) -> dict:
    base = doctor.collect(out="tuimon-sessions", cache=Path("/nonexistent/cache"),
                          nvml=fake.make(init_error=fake.NVML_ERROR_LIBRARY_NOT_FOUND),
                          torch={"ok": False, "error": "not asked"})
    return {**base, **over}
