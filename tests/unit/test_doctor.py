"""`tuimon doctor`: the real command on this machine, and the GPU lines against the fake NVML."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests import fake_pynvml as fake
from tuimon.cli import doctor
from tuimon.runner import torch_facts

ROOT = Path(__file__).resolve().parents[2]


def run_doctor(tmp_path: Path, *args: str, importtime: bool = False) -> subprocess.CompletedProcess:
    env = {**os.environ, "HOME": str(tmp_path / "home"), "COLUMNS": "200",
           "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)}
    cmd = [sys.executable, *(["-X", "importtime"] if importtime else []), "-m", "tuimon", "doctor", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path)


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("doctor")
    proc = run_doctor(tmp, "--format", "json", importtime=True)
    assert proc.returncode == 0, proc.stderr
    return tmp, json.loads(proc.stdout), proc.stderr


def test_json_fields_on_this_machine(report):
    tmp, r, _ = report
    assert r["tuimon"]["version"]
    assert r["python"]["version"].startswith(f"{sys.version_info.major}.{sys.version_info.minor}")
    for pkg in ("torch", "torchvision", "timm", "textual"):
        assert r["packages"][pkg], pkg
    t = r["torch"]
    assert t["ok"] and t["version"].startswith(r["packages"]["torch"].split("+")[0])
    assert isinstance(t["cuda_available"], bool)
    if not t["cuda_available"]:
        assert t["cuda_why_not"] and t["cuda_devices"] == []
        assert not t["triton"]["usable"] and t["triton"]["why_not"]
    cxx = t["cpp_compiler"]
    assert cxx["name"] or cxx["error"]  # a compiler, or why none
    nv = r["nvml"]
    if nv["available"]:
        assert nv["devices"] and all(d["name"] for d in nv["devices"])
    else:  # this CPU machine: NVML says why in one line, and there are no devices
        assert nv["reason"] and "\n" not in nv["reason"] and nv["devices"] == []
    cpu = r["cpu"]
    assert cpu["logical"] >= 1 and cpu["memory"] > 0
    assert r["sessions"] == {**r["sessions"], "path": str(tmp / "tuimon-sessions"), "exists": False,
                             "writable": True}
    home_cache = tmp / "home" / ".cache" / "tuimon" / "inductor"
    assert r["cache"]["path"] == str(home_cache) and r["cache"]["state"] == "absent"


def test_the_doctor_process_never_imports_torch(report):
    _, _, importtime = report  # -X importtime lists every module the tuimon process imported
    assert "tuimon.cli.doctor" in importtime
    assert " torch" not in importtime and "| torch" not in importtime


def test_text_output(tmp_path):
    proc = run_doctor(tmp_path, "--out", str(tmp_path / "s"))
    assert proc.returncode == 0, proc.stderr
    lines = dict(re.split(r"\s{2,}", line.strip(), maxsplit=1) for line in proc.stdout.splitlines())
    for what in ("tuimon", "python", "torch", "torchvision", "timm", "textual", "CUDA available",
                 "torch built with", "Inductor C++ (CPU)", "Triton (GPU)", "NVML", "CPU", "memory",
                 "sessions (--out)", "Inductor cache"):
        assert what in lines, (what, proc.stdout)
    assert lines["sessions (--out)"].startswith(f"{tmp_path / 's'}: writable")
    assert lines["Inductor cache"].endswith("absent (cold: the first --warm-cache run fills it)")
    if not lines["NVML"].startswith("works"):
        assert lines["NVML"].startswith("does not work: ")


@pytest.mark.parametrize("args", [["--format", "yaml"], ["extra"], ["--out"]])
def test_bad_input_is_one_line_and_exit_2(tmp_path, args):
    proc = run_doctor(tmp_path, *args)
    assert proc.returncode == 2
    assert proc.stdout == "" and len(proc.stderr.strip().splitlines()) == 1
    assert proc.stderr.startswith("tuimon: error: ")


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
