"""Memory per phase and energy, read side (analysis/stats/memory.py, energy.py; their words in
report/memory_text.py), on synthetic sessions: per-phase peaks, compile against eager, the graph
pool, the batch that would fit; NVML's energy counter, power × time, n/a, runs beside each other;
RAPL's reason; a CPU session's n/a beside its RSS."""

from __future__ import annotations

import json

import pytest

from tuimon.analysis import is_measured, summarize
from tuimon.analysis.stats.memory import batch_fit
from tuimon.report import export, memory_text

MiB = 2**20
T0 = 1_800_000_000.0


def run(name: str, mode: str, t0: float, steps: int = 40, ms: float = 100.0,
        device: str = "cuda:0", mem: dict | None = None, pool: dict | None = None) -> list[dict]:
    """A run of ``steps`` 100 ms steps from t0 (step 0 compiles in a compiled run), its memory
    events where given."""
    evs = [{"type": "run_queued", "t": t0, "run": name, "mode": mode, "precision": "fp32"},
           {"type": "run_started", "t": t0, "run": name, "mode": mode, "precision": "fp32",
            "device": device, "device_name": "fake"}]
    t = t0
    for i in range(steps):
        step = {"type": "step", "run": name, "i": i, "ms": ms, "data_ms": 0.0, "n": 8, "loss": 1.0,
                "phase": "warmup" if i < 1 else "steady"}
        if i == 0 and mode != "eager":
            step["compile_ms"] = 500.0
        if mem is not None and i in (3, 4):
            step["mem"] = 1
        t += ms / 1000.0
        step["t"] = round(t, 6)
        evs.append(step)
    if mem is not None:
        evs.append({"type": "memory_phases", "t": t, "run": name, "steps": [3, 4], **mem})
    if pool is not None:
        evs.append({"type": "memory_phases", "t": t, "run": name, **pool})
    evs.append({"type": "finished", "t": round(t + 0.05, 6), "run": name, "reason": "steps"})
    return evs


def samples(t0: float, t1: float, stepping: dict[float, list[str]] | None = None, *,
            runs: list[str], energy: bool = True, power: float | None = 250.0,
            foreign_sm: int = 0, rapl: bool = False) -> list[dict]:
    """A sample each 0.5 s; the device draws 250 W (its counter in mJ), ``stepping`` by period."""
    out, t, k = [], t0, 0
    while t <= t1:
        device = {"index": 0, "power_w": power, "energy_mj": round((t - T0) * 250_000) if energy else None,
                  "foreign": {"pids": [9] if foreign_sm else [], "sm_util": foreign_sm}}
        s = {"type": "sample", "t": round(t, 6), "devices": [device],
             "system": {"cpu_percent": 50.0, "foreign_cores": 0.1},
             "runs": {r: {"cpu_percent": 100.0, "rss": 2**30, "gpus": [0]} for r in runs},
             "stepping": runs if len(runs) == 1 else []}
        if stepping:
            s["stepping"] = next((v for at, v in sorted(stepping.items(), reverse=True) if t >= at), [])
        if rapl:
            s["system"]["energy_uj"] = round((t - T0) * 40e6)  # 40 W of CPU packages
            s["devices"] = []
            s["runs"] = {r: {**v, "gpus": []} for r, v in s["runs"].items()}
        out.append(s)
        t += 0.5
        k += 1
    return out


PHASES = {"base": 300 * MiB, "budget": 1000 * MiB, "total": 1100 * MiB,
          "phases": {"forward": {"peak": 500 * MiB, "end": 500 * MiB},
                     "backward": {"peak": 650 * MiB, "end": 350 * MiB},
                     "optimizer": {"peak": 380 * MiB, "end": 300 * MiB}}}
COMPILED = {**PHASES, "phases": {"forward": {"peak": 420 * MiB, "end": 420 * MiB},
                                 "backward": {"peak": 655 * MiB, "end": 350 * MiB},
                                 "optimizer": {"peak": 420 * MiB, "end": 300 * MiB}}}


def sequential(rapl: bool = False, **kw) -> list[dict]:
    """eager, then default: each alone on the device (energy samples over both)."""
    device = "cpu" if rapl else "cuda:0"
    a = run("eager-fp32", "eager", T0, device=device, mem=None if rapl else PHASES)
    b = run("default-fp32", "default", T0 + 10, device=device, mem=None if rapl else COMPILED,
            pool=None if rapl else {"graph_pool": 0})
    s = samples(T0 + 0.25, T0 + 4.3, runs=["eager-fp32"], rapl=rapl, **kw)
    s += samples(T0 + 10.25, T0 + 14.3, runs=["default-fp32"], rapl=rapl, **kw)
    return sorted(a + b + s, key=lambda e: e["t"])


def rows(evs: list[dict]) -> dict:
    return {r.run: r for r in summarize(evs).runs}


def test_each_phases_peak_and_what_compile_changed():
    r = rows(sequential())
    eager, compiled = r["eager-fp32"], r["default-fp32"]
    assert eager.memory.mem_phases["backward"]["peak"] == 650 * MiB
    assert eager.memory.mem_base == 300 * MiB and eager.memory.mem_total == 1100 * MiB
    assert "change" not in eager.memory.mem_phases["forward"]  # the baseline itself
    changes = {k: (v["vs_baseline"], v["change"]) for k, v in compiled.memory.mem_phases.items()}
    assert changes == {"forward": (-80 * MiB, "saved"), "backward": (5 * MiB, "same"),
                       "optimizer": (40 * MiB, "added")}
    assert compiled.memory.mem_baseline == "eager-fp32"
    assert memory_text.change_cell(compiled) == ("fwd −80.0 MiB (saved) · bwd +5.0 MiB (same) · "
                                                 "opt +40.0 MiB (added)")
    # The memory steps are kept out of the step times.
    assert not is_measured({"phase": "steady", "mem": 1}) and eager.timing.measured <= 40 - 1 - 2


def test_the_batch_that_would_fit():
    # forward grows 200 MiB over 300; backward 300 over 350; budget 1000: min(700/200, 650/300)
    fit, why = batch_fit(300 * MiB, PHASES["phases"], 1000 * MiB)
    assert why is None and fit == 2.1  # 2.166…, rounded down
    assert rows(sequential())["eager-fp32"].memory.batch_fit == 2.1
    assert memory_text.fit_cell(rows(sequential())["eager-fp32"]) == "~2.1× today's (device 1.1 GiB)"
    fit, why = batch_fit(300 * MiB, PHASES["phases"], 1000 * MiB, pool=64 * MiB)
    assert fit is None and why.code == "graph_pool"
    flat = {k: {"peak": 300 * MiB, "end": 300 * MiB} for k in ("forward", "backward")}
    assert batch_fit(300 * MiB, flat, 1000 * MiB)[1].code == "no_growth"
    assert batch_fit(300 * MiB, PHASES["phases"], None)[1].code == "no_budget"
    assert batch_fit(300 * MiB, PHASES["phases"], 600 * MiB)[1].code == "over_budget"
    big = {"forward": {"peak": 310 * MiB, "end": 310 * MiB}}
    assert batch_fit(300 * MiB, big, 1000 * MiB) == (70.0, None)  # whole above 10×


def test_the_graph_pool_and_why_the_batch_cannot_be_told_under_it():
    evs = sequential()
    for e in evs:
        if e["type"] == "memory_phases" and "graph_pool" in e:
            e.update(graph_pool=64 * MiB, graph_pool_used=40 * MiB)
    compiled = rows(evs)["default-fp32"]
    assert compiled.memory.graph_pool == 64 * MiB and compiled.memory.batch_fit is None
    assert compiled.memory.batch_fit_why.code == "graph_pool"
    assert memory_text.pool_cell(compiled) == "64.0 MiB reserved, 40.0 MiB in use"
    assert memory_text.fit_cell(compiled).startswith("cannot tell: CUDA graphs hold")
    for e in evs:
        if e["type"] == "memory_phases" and "graph_pool" in e:
            e.update(graph_pool=None, graph_pool_unread="AttributeError: moved")
    assert memory_text.pool_cell(rows(evs)["default-fp32"]) == "cannot tell (AttributeError: moved)"


def test_energy_from_the_nvml_counter_per_step_and_per_run():
    r = rows(sequential())
    e = r["eager-fp32"].energy
    assert e.energy_source == "nvml-counter"
    # 250 W, 100 ms steps: 25 J a step, over the periods holding only measured steps
    assert e.joules_per_step == pytest.approx(25.0, rel=0.02) and e.energy_steps >= 20
    assert e.joules_run == pytest.approx(250 * 3.5, rel=0.01)  # its samples in its life: 0.25..3.75 s
    assert memory_text.per_step_cell(r["eager-fp32"]).startswith("25 J (NVML energy counter; ")


def test_energy_from_power_times_time_where_the_counter_is_missing():
    e = rows(sequential(energy=False))["eager-fp32"].energy
    assert e.energy_source == "nvml-power"
    assert e.joules_per_step == pytest.approx(25.0, rel=0.02)


def test_energy_is_na_where_the_device_says_neither():
    r = rows(sequential(energy=False, power=None))["eager-fp32"]
    assert r.energy.energy_source is None and r.energy.energy_why.code == "no_sensor"
    assert memory_text.per_step_cell(r) == "n/a: this GPU reports neither energy nor power"
    assert memory_text.per_run_cell(r) == "n/a"  # its why said once, in the per-step row


def test_runs_side_by_side_cannot_tell_their_energy_apart():
    a = run("eager-fp32", "eager", T0, mem=PHASES)
    b = run("default-fp32", "default", T0 + 0.05, mem=COMPILED)
    s = samples(T0 + 0.25, T0 + 4.3, runs=["eager-fp32", "default-fp32"],
                stepping={T0: ["eager-fp32", "default-fp32"]})
    r = rows(sorted(a + b + s, key=lambda e: e["t"]))
    for name in r:
        assert r[name].energy.joules_per_step is None and r[name].energy.joules_run is None
        assert r[name].energy.energy_why.code == "shared"
        assert memory_text.per_run_cell(r[name]).startswith("cannot tell: other runs")


def test_turns_count_only_the_periods_a_run_stepped_alone():
    # Interleaved: both alive throughout, eager alone for the first 2 s, then default alone.
    a = run("eager-fp32", "eager", T0, steps=20)
    b = run("default-fp32", "default", T0 + 2.0, steps=20)
    s = samples(T0 + 0.25, T0 + 4.3, runs=["eager-fp32", "default-fp32"],
                stepping={T0: ["eager-fp32"], T0 + 2.2: ["default-fp32"]})
    r = rows(sorted(a + b + s, key=lambda e: e["t"]))
    assert r["eager-fp32"].energy.joules_per_step == pytest.approx(25.0, rel=0.02)
    assert r["eager-fp32"].energy.joules_run is None  # the other lived beside it


def test_another_process_on_the_gpu_makes_it_someone_elses_energy():
    e = rows(sequential(foreign_sm=30))["eager-fp32"].energy
    assert e.joules_per_step is None and e.joules_run is None and e.energy_why.code == "shared"


def test_a_cpu_session_says_na_for_memory_per_phase_and_keeps_rss():
    evs = sequential(rapl=True)
    evs.insert(0, {"type": "probe_info", "t": T0, "gpu_available": False, "reason": "no GPU",
                   "rapl": None})
    r = rows(evs)["eager-fp32"]
    assert r.memory.mem_na == "cpu" and memory_text.phases_cell(r).startswith("n/a (CPU")
    assert r.energy.energy_source == "rapl"
    assert r.energy.joules_per_step == pytest.approx(4.0, rel=0.02)  # 40 W × 100 ms


def test_rapl_unreadable_is_said_as_its_reason():
    evs = sequential(rapl=True)
    for e in evs:
        if e["type"] == "sample":
            e["system"].pop("energy_uj")
    evs.insert(0, {"type": "probe_info", "t": T0, "gpu_available": False, "reason": "no GPU",
                   "rapl": "RAPL's counters are readable by root only here (x: permission denied)"})
    r = rows(evs)["eager-fp32"]
    assert r.energy.energy_why.code == "rapl"
    assert memory_text.per_step_cell(r) == ("n/a: RAPL's counters are readable by root only here "
                                            "(x: permission denied)")


def test_summary_files_carry_the_figures_codes_and_words(tmp_path):
    summary = summarize(sequential())
    doc = json.loads(export.to_json({}, summary))
    row = {r["run"]: r for r in doc["runs"]}["default-fp32"]
    memory = row["memory"]
    assert memory["mem_phases"]["forward"] == {"peak": 420 * MiB, "end": 420 * MiB,
                                               "vs_baseline": -80 * MiB, "change": "saved"}
    assert memory["graph_pool"] == 0 and row["energy"]["energy_source"] == "nvml-counter"
    assert row["words"]["memory"]["graph_pool"] == "none (no CUDA graphs)"
    assert memory["batch_fit"] == 2.1 and memory["batch_fit_why"] is None  # min(700/120, 650/305)
    md = export.to_markdown({}, summary)
    for name in ("memory per phase (allocator peak)", "memory per phase vs eager", "CUDA-graph pool",
                 "largest batch that would fit (if activations grow with it)", "energy per step",
                 "energy per run"):
        assert f"| {name} |" in md


def test_the_panel_says_the_batch_and_the_energy_in_a_few_words():
    r = rows(sequential())
    assert memory_text.panel_text(r["eager-fp32"]) == " · fits ~2.1× batch · 25 J/step"
    assert memory_text.panel_text(None) == ""
    cpu = rows(sequential(rapl=True))["eager-fp32"]
    assert memory_text.panel_text(cpu) == " · 4 J/step"  # no batch on a CPU: its RSS is the answer


def test_the_run_panel_shows_them_beside_vram():
    from tuimon.ui.model import RunLive
    from tuimon.ui.widgets.run_panel import system

    live = RunLive("eager-fp32", "eager", "fp32")
    live.devices = [{"index": 0, "util_gpu": 90, "mem_used": 30 * 2**30, "mem_total": 80 * 2**30}]
    text = system(live, rows(sequential())["eager-fp32"]).plain
    assert "VRAM 30.0 GiB/80.0 GiB · fits ~2.1× batch · 25 J/step" in text
    assert "fits" not in system(live).plain  # before a summary: VRAM alone


def test_a_gpu_run_nvml_does_not_see_is_the_machines_one_gpu():
    evs = sequential()
    for e in evs:
        if e["type"] == "sample":
            for v in e["runs"].values():
                v["gpus"] = []  # a container: NVML's pids are the host's
    assert rows(evs)["eager-fp32"].energy.joules_per_step == pytest.approx(25.0, rel=0.02)
    for e in evs:
        if e["type"] == "sample":
            e["devices"].append({**e["devices"][0], "index": 1})
    r = rows(evs)["eager-fp32"]
    assert r.energy.energy_why.code == "which_gpu" and memory_text.per_step_cell(r).startswith(
        "cannot tell: NVML does not see its process")
