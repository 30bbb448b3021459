"""The essential stage's claims (bench/gpu/claims_essential.py, issue 43) and its part of the
RESULTS.md section (report_essential.py) on results of known shape: each holds on a GPU's, none
on a CPU's, and the section lists them in the call's order."""

from __future__ import annotations

import sys

from conftest import ROOT
from test_gpu_programme import run_row, stage_doc

sys.path.insert(0, str(ROOT / "bench/gpu"))

import claims  # noqa: E402
import claims_essential  # noqa: E402
import report  # noqa: E402


def test_the_essential_claims_on_known_results():
    gb = 2**30
    flops = {"step": {"flops": 3e12, "mfu_measured": 0.41, "mfu_datasheet": 0.33},
             "phases": {"forward": {"flops": 1e12}, "backward": {"flops": 2e12}, "optimizer": {"flops": 0}},
             "precision": "bf16", "peak_datasheet": 989e12, "peak_measured": 790e12,
             "peak_device": "H100 SXM", "mfu_over": []}
    mem = {p: {"peak": gb, "change": "saved"} for p in ("forward", "backward", "optimizer")}
    gpu = {"gpu_util_mean": 97.0, "vram_max": 30 * gb, "temp_max": 61, "power_mean": 480,
           "cuda_peak_allocated": 20 * gb, "gpu_proc_mem_max": 22 * gb, "mem_phases": mem, "flops": flops}
    seed = {"verdict": "Verdict: stay eager", "runs": [
        run_row("eager", **gpu),
        run_row("default", **gpu, speedup=1.08, speedup_lo=1.05, speedup_hi=1.11, compile_s=61.0,
                compile_phases={"dynamo": 9.0, "inductor": 50.0}, breakeven_steps=12000, breakeven_s=700.0)]}
    graphs = {"runs": [run_row("eager", "fp32"), run_row("reduce-overhead", "fp32", graph_launches=2.0,
                                                          graph_pool=64 << 20, cudagraphs=[])]}
    phases = {p: {"median_ms": 1.0} for p in ("data", "forward", "backward", "optimizer")}
    files = {"outputs": [{"label": f"{m}/script", "files": ["checkpoint.pt", "train.log"]}
                         for m in ("eager", "default")], "outside": 0, "changed": 0}
    script = {"runs": [run_row(m, "script", step_phases=phases) for m in ("eager", "default")],
              "files": files}
    doc = stage_doc("essential", {"seed": seed, "cudagraphs": graphs, "script": script,
                                  "overhead": {"device": "cuda", "overhead": {"1ms": {
                                      "us": 12.0, "pct": 1.2, "runs_pct": [1.0, 1.2, 1.4]}}}})
    rows = {x["claim"]: x for x in claims.compass(claims.Results({"essential": doc}))}
    for name, _, _ in claims_essential.CLAIMS:
        assert rows[name]["verdict"] == claims.HOLDS, rows[name]
    assert "1.08× (95 % CI 1.05–1.11)" in rows[claims_essential.CLAIMS[0][0]]["measured"]
    assert rows["overhead at ~1 ms GPU steps"]["verdict"] == claims.HOLDS
    assert rows["GPU screenshots"]["verdict"] == claims.NOT  # its step did not run
    text, _ = report.render({"essential": doc}, [])
    section = text.split("### The essential call", 1)[1].split("### The seed's table")[0]
    said = [line.split(" | ")[0][2:] for line in section.splitlines() if "| **" in line]
    assert said == claims_essential.ORDER  # each claim the call measures, in its steps' order
    assert "| swin_t | default/amp | 100 ms" in text  # the seed's row from the essential call


def test_a_run_on_the_cpu_is_not_a_gpu_measurement():
    seed = {"runs": [run_row("eager", device="cpu"), run_row("default", device="cpu", speedup=1.1)]}
    rows = {x["claim"]: x for x in claims.compass(claims.Results({"essential": stage_doc(
        "essential", {"seed": seed})}))}
    assert rows[claims_essential.CLAIMS[0][0]]["verdict"] == claims.NOT
    assert "done on cpu" in rows[claims_essential.CLAIMS[0][0]]["measured"]
