"""The GPU programme's claims of issue 35 (bench/gpu/claims_memory.py) on results of known
shape: what a lent device's check stage would bring back, and what is said when it did not run."""

from __future__ import annotations

import sys

from conftest import ROOT

sys.path.insert(0, str(ROOT / "bench/gpu"))

import claims  # noqa: E402

MiB = 2**20


def row(mode: str, **kw) -> dict:
    peaks = {"forward": {"peak": 40 * MiB}, "backward": {"peak": 60 * MiB},
             "optimizer": {"peak": 30 * MiB}}
    if mode != "eager":
        peaks = {k: {**v, "vs_baseline": -MiB, "change": "same"} for k, v in peaks.items()}
    return {"mode": mode, "device": "cuda:0", "status": "done", "mem_phases": peaks,
            "mem_total": 80 * 2**30, "energy_source": "nvml-counter", "joules_per_step": 0.4,
            "energy_steps": 500, "joules_run": 900.0, **kw}


def compass(check: dict) -> dict:
    return {x["claim"]: x for x in claims.compass(claims.Results({"check": check}))}


def test_the_memory_and_energy_claims_hold_on_a_good_check_stage():
    runs = [row("eager", batch_fit=900.0), row("default", batch_fit=800.0),
            row("reduce-overhead", graph_pool=64 * MiB, graph_pool_used=40 * MiB,
                batch_fit_why={"code": "graph_pool"})]
    check = {"steps": [
        {"name": "memory-energy", "status": "ok", "result": {"runs": runs}},
        {"name": "nvml", "status": "ok", "result": {"available": True, "energy": {
            "counter_j": 1800.0, "power_time_j": 1750.0, "seconds": 7.0}}}]}
    got = compass(check)
    for name in ("memory per phase on CUDA (issue 35)", "the CUDA-graph pool under reduce-overhead",
                 "the largest batch that would fit", "energy per step from NVML's counter"):
        assert got[name]["verdict"] == claims.HOLDS, got[name]
    assert "64.0 MiB reserved" in got["the CUDA-graph pool under reduce-overhead"]["measured"]
    assert "3% apart" in got["energy per step from NVML's counter"]["measured"]


def test_what_does_not_hold_and_what_was_not_measured():
    runs = [row("eager", joules_per_step=None, energy_source=None, batch_fit=None,
                batch_fit_why={"code": "no_budget"}),
            row("reduce-overhead", graph_pool=None, graph_pool_unread="AttributeError: moved")]
    got = compass({"steps": [{"name": "memory-energy", "status": "ok", "result": {"runs": runs}}]})
    assert got["the CUDA-graph pool under reduce-overhead"]["verdict"] == claims.FAILS
    assert got["energy per step from NVML's counter"]["verdict"] == claims.FAILS
    assert got["the largest batch that would fit"]["verdict"] == claims.FAILS
    nothing = {x["claim"]: x for x in claims.compass(claims.Results({}))}
    assert nothing["memory per phase on CUDA (issue 35)"] == {
        "claim": "memory per phase on CUDA (issue 35)", "expected": "fwd, bwd, opt peaks for every run; "
        "compiled vs eager", "measured": "stage check not run", "verdict": claims.NOT}
