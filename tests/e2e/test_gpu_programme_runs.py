"""The real runs of tests/unit/test_gpu_programme.py: the CLI in a child process, real scripts and compiles.
The pure tests of the same feature stay in tests/unit/test_gpu_programme.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
import time

import pytest
from conftest import ROOT
from test_gpu_programme import OK, claims, programme, stages  # (bench/gpu on the path)


def test_the_whole_programme_dry_runs_and_reports(tmp_path):
    out, work = tmp_path / "out", tmp_path / "work"
    env = {**os.environ, "OUT": str(out), "PY": sys.executable}
    t = time.monotonic()
    proc = subprocess.run(["bash", str(ROOT / "bench/gpu/all.sh"), "all", "--dry-run", "--work", str(work)],
                          capture_output=True, text=True, env=env, timeout=240, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert time.monotonic() - t < 300  # the essential stage's ~45 s included, beside another worker
    docs = {p.stem: json.loads(p.read_text()) for p in out.glob("*.json")}
    assert set(docs) == set(stages.ORDER)
    for name, doc in docs.items():
        assert doc["dry_run"] and doc["format"] == programme.FORMAT
        assert [s["name"] for s in doc["steps"]][0] == "facts"
        bad = [(s["name"], s["status"]) for s in doc["steps"] if not s["status"].startswith(OK)]
        assert not bad, (name, bad)
        files = sorted(p.name for p in out.glob(f"{name}.*"))
        assert files == [f"{name}.json", f"{name}.log", f"{name}.tar.gz"]
    check = {s["name"]: s for s in docs["check"]["steps"]}
    assert check["nvml"]["result"]["available"]  # the fake H100, through tuimon's probe
    assert check["nvml"]["result"]["max_under_load"]["temp_c"] == 64
    assert check["cuda-tests"]["result"]["counts"]["passed"] == 1
    assert check["nccl"]["status"].startswith("skipped: this machine has 0 CUDA GPU(s)")
    amp = {s["name"]: s for s in docs["amp"]["steps"]}
    runs = amp["swin_t"]["result"]["runs"]  # the dry run's tiny stand-in, a real session
    # three processes a variant, tuimon's default
    assert [(r["mode"], r["status"]) for r in runs] == [("eager", "done")] * 3 and runs[0]["median_ms"] > 0
    assert amp["swin_b"]["status"] == "checked (dry run: not run)"
    # issue 26 is built: its stage's steps are checked like the others (its phases' not yet, maybe)
    warm = {s["name"]: s["status"] for s in docs["warm"]["steps"]}
    assert warm["warm-recipe"] == "checked (dry run: not run)"
    with tarfile.open(out / "amp.tar.gz") as tar:
        names = tar.getnames()
    assert any(n.endswith("summary.json") for n in names) and not any("inductor-cache" in n for n in names)

    md, compass = tmp_path / "section.md", tmp_path / "compass.json"
    got = subprocess.run([sys.executable, str(ROOT / "bench/gpu/report.py"), str(out), "--out", str(md),
                          "--json", str(compass)], capture_output=True, text=True, timeout=60)
    assert got.returncode == 0, got.stderr
    text = md.read_text()
    assert "**DRY RUN**" in text and "### The seed's table" in text and "### What holds" in text
    assert "| swin_t | eager/amp | " in text and "| convnext_l | max-autotune/fp32 | not measured: " in text
    rows = {r["claim"]: r for r in json.loads(compass.read_text())}
    assert len(rows) == len(claims.CLAIMS)
    assert rows["NVML for real: util, VRAM, temperature, power, clocks"]["verdict"] == claims.HOLDS
    assert rows["overhead at ~1 ms GPU steps"]["verdict"] == claims.NOT
    assert rows["warm start on CUDA (issue 26)"]["verdict"] != claims.HOLDS  # a dry run measures nothing


def test_trust_on_cuda_without_cuda_is_one_line():
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("CUDA is here: the GPU programme's check stage runs trust.py --device cuda")
    got = subprocess.run([sys.executable, str(ROOT / "bench/trust.py"), "--device", "cuda", "--runs", "1"],
                         capture_output=True, text=True, timeout=120)
    assert got.returncode == 1 and got.stdout == ""
    assert got.stderr == "trust.py: --device cuda asked for, but torch sees no CUDA device\n"
