"""The essential stage's dry run for real (bench/gpu/essential.py, issue 43): `bash bench/gpu/all.sh
essential --dry-run` on the CPU against the fake NVML (tests/fake_nvml), every step's stand-in
run in the stage's order within its 9-minute cap, then report.py on what it brought back. The pure
tests of the same stage (its budget on a fake clock, its claims): tests/unit/test_gpu_essential.py."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time

from conftest import ROOT
from test_gpu_essential import LEAVE, ORDER, essential, execute_ok
from test_gpu_essential_claims import claims_essential

# Measured on a 2-core machine shared with other jobs: 44-86 s, 51-59 s of CPU.
DRY_S, DRY_CPU_S = 240, 75  # the wall time beside the suite's other worker (-n 2); the CPU its own


def test_the_essential_stage_dry_runs_every_step_in_order_and_reports(tmp_path):
    out, work = tmp_path / "out", tmp_path / "work"
    env = {**os.environ, "OUT": str(out), "PY": sys.executable}
    command = ["bash", str(ROOT / "bench/gpu/all.sh"), "essential", "--dry-run", "--work", str(work)]
    t, before = time.monotonic(), resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run(command, capture_output=True, text=True, env=env, timeout=300, cwd=tmp_path)
    took, after = time.monotonic() - t, resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    print(f"essential dry run: {took:.1f} s, {cpu:.1f} s of CPU")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert took < DRY_S and cpu < DRY_CPU_S, f"the dry run took {took:.0f} s, {cpu:.0f} s of CPU"
    doc = json.loads((out / "essential.json").read_text())
    assert doc["dry_run"] and doc["call_s"] == essential.CALL_S == 540
    assert doc["budget_s"] == essential.CALL_S - doc["setup_s"]  # all.sh asked 570 less set-up
    steps = doc["steps"]
    assert [s["name"] for s in steps] == ORDER
    assert [s["status"] for s in steps] == ["ok"] * len(ORDER), [(s["name"], s["status"]) for s in steps]
    assert doc["wall_s"] < DRY_S and sum(s["wall_s"] for s in steps) <= doc["wall_s"]
    seed = steps[2]
    assert abs(seed["limit_s"] - min(300, seed["left_s"] - LEAVE)) < 0.2  # sized to what is left
    repeats, seconds = essential.seed_plan(seed["limit_s"])
    assert seed["sized_argv"][-6:-2] == ["--repeats", str(repeats), "--duration", f"{seconds:g}"]
    assert "recipes/swin_t.py" in seed["sized_argv"][3] and "tiny_mlp" in seed["argv"][3]

    got = {s["name"]: s.get("result") or {} for s in steps}
    assert got["doctor"]["nvml"]["available"]  # the fake H100, through tuimon's own probe
    assert got["seed"]["runs"][0]["precision"] == "amp" and got["seed"]["runs"][0]["flops"]["precision"]
    assert got["syncs"]["counts"]["passed"] >= 3  # the sync guard against a fake CUDA
    assert got["script"]["files"]["outputs"][0]["files"] == ["checkpoint.pt", "train.log"]
    assert got["script"]["files"]["changed"] == 0  # its writes stayed in its own view
    assert set(got["script"]["runs"][0]["step_phases"]) >= {"data", "forward", "backward", "optimizer"}
    assert got["overhead"]["overhead"]["1ms"]["pct"] is not None
    assert [s["file"] for s in got["screenshot"]["screenshots"]] == ["gpu-main-160x45.svg"]
    assert sorted(p.name for p in out.iterdir()) == ["essential.json", "essential.log", "essential.tar.gz",
                                                      "gpu-main-160x45.svg"]
    execute_ok(out)

    md = tmp_path / "section.md"
    rep = subprocess.run([sys.executable, str(ROOT / "bench/gpu/report.py"), str(out), "--out", str(md)],
                         capture_output=True, text=True, timeout=60)
    assert rep.returncode == 0, rep.stderr
    section = md.read_text().split("### The essential call", 1)[1].split("### The seed's table")[0]
    claimed = [line.split(" | ")[0][2:] for line in section.splitlines() if "| **" in line]
    assert claimed == claims_essential.ORDER
    assert "| seed | " in section and "--repeats" in section  # its limit and its sized command
