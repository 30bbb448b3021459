"""The real runs of tests/unit/test_doctor.py: the CLI in a child process, real scripts and compiles.
The pure tests of the same feature stay in tests/unit/test_doctor.py."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from test_doctor import ROOT


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
