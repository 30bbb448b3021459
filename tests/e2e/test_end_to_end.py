"""Real sessions, real child processes, real torch.compile on CPU, read back from the store."""

from __future__ import annotations

import csv
import json
import os
import signal
import statistics
import subprocess
import sys
import time

import pytest
from conftest import RECIPES, TEST_RECIPES

from tuimon.analysis.stats import percentile
from tuimon.sessiondir import store

TINY = str(RECIPES / "tiny_mlp.py")


def runs_of(session):
    evs, bad = store.read_events(session)
    assert bad == 0
    by_run: dict[str, dict[str, list]] = {}
    for e in evs:
        if "run" in e:
            by_run.setdefault(e["run"], {}).setdefault(e["type"], []).append(e)
    return evs, by_run


def test_tiny_mlp_eager_vs_compiled(tuimon):
    proc, session = tuimon(TINY, "--headless", "--modes", "eager,default", "--steps", "80",
                           "--device", "cpu")  # Inductor's C++ path, on a GPU box too
    assert proc.returncode == 0, proc.stderr
    evs, runs = runs_of(session)
    assert set(runs) == {"eager-fp32", "default-fp32"}
    for _run, kinds in runs.items():
        started = kinds["run_started"][0]
        assert started["device"] == "cpu" and started["params"] > 0 and started["torch"]
        assert started["pid"] != os.getpid()
        assert [s["i"] for s in kinds["step"]] == list(range(80))
        assert all(s["ms"] > 0 and s["n"] == 32 for s in kinds["step"])
        assert kinds["finished"][0]["reason"] == "steps"
        assert kinds["run_exited"][0]["returncode"] == 0
    # A real compile happened inside the compiled run's first step, and only there.
    comp_steps = runs["default-fp32"]["step"]
    assert comp_steps[0].get("compile_ms", 0) > 0
    assert not any(s.get("compile_ms") for s in comp_steps[1:])
    assert "compile_ms" not in runs["eager-fp32"]["step"][0]
    assert any(p["phase"] == "compiling" for p in runs["default-fp32"]["phase"])
    # Same seed, same batches: the losses agree step by step.
    e_loss = [s["loss"] for s in runs["eager-fp32"]["step"]]
    c_loss = [s["loss"] for s in comp_steps]
    assert e_loss[0] == pytest.approx(c_loss[0], rel=1e-4)
    assert max(abs(a - b) for a, b in zip(e_loss, c_loss, strict=True)) < 1e-3
    assert e_loss[-1] < e_loss[0]  # it trains

    # Exports exist, and their numbers are the raw step times' numbers.
    for name in ("meta.json", "summary.md", "summary.json", "steps.csv", "logs/eager-fp32.log"):
        assert (session / name).is_file(), name
    summary = json.loads((session / "summary.json").read_text())
    assert summary["meta"]["status"] == "done"
    for r in summary["runs"]:
        timing = r["timing"]
        # Warm-up is found in the data: at least the first step, at most half of the rest.
        assert 1 <= timing["steady_from"] <= 41
        steady = sorted(s["ms"] for s in runs[r["run"]]["step"] if s["i"] >= timing["steady_from"]
                        and not s.get("compile_ms") and not s.get("profiled"))
        # The automatic diagnosis capture's steps (a 3-step window, as the second turn began) are
        # kept apart too.
        captured = [s["i"] for s in runs[r["run"]]["step"] if s.get("profiled")]
        assert len(captured) == 3 and captured[0] >= 1
        assert timing["measured"] == len(steady) == 80 - timing["steady_from"] - sum(
            i >= timing["steady_from"] for i in captured)
        assert timing["median_ms"] == pytest.approx(statistics.median(steady))
        assert timing["p90_ms"] == pytest.approx(percentile(steady, 0.9))
        assert r["loss"]["final_loss"] == pytest.approx(runs[r["run"]]["step"][-1]["loss"])
    comp = next(r for r in summary["runs"] if r["run"] == "default-fp32")
    eager = next(r for r in summary["runs"] if r["run"] == "eager-fp32")
    ratio = eager["timing"]["median_ms"] / comp["timing"]["median_ms"]
    assert comp["compare"]["speedup"] == pytest.approx(ratio)
    assert comp["compile"]["compile_s"] > 0 and comp["compare"]["baseline"] == "eager/fp32"
    with open(session / "steps.csv") as f:
        assert len(list(csv.DictReader(f))) == 160

    # The terminal got the table; `tuimon summary` rebuilds the same files from the store alone.
    assert "median step (p10–p90)" in proc.stdout and "speedup vs eager" in proc.stdout
    md_before = (session / "summary.md").read_text()
    (session / "summary.md").unlink()
    again, _ = tuimon("summary", str(session))
    assert again.returncode == 0 and again.stdout == md_before
    as_json, _ = tuimon("summary", str(session), "--format", "json")
    assert json.loads(as_json.stdout)["runs"] == summary["runs"]


def test_a_failing_variant_does_not_stop_the_others(tuimon):
    proc, session = tuimon(str(TEST_RECIPES / "crash_at_step.py"), "--modes", "eager",
                           "--precision", "fp32,amp", "--steps", "20", "--set", "crash_at=6")
    assert proc.returncode == 1
    _, runs = runs_of(session)
    failed = runs["eager-amp"]["failed"][0]
    assert failed["stage"] == "step" and "deliberate failure after 6 steps" in failed["message"]
    assert "Traceback" in failed["traceback"]
    assert len(runs["eager-amp"]["step"]) == 6  # what it measured before failing is kept
    assert len(runs["eager-fp32"]["step"]) == 20
    md = (session / "summary.md").read_text()
    assert "failed: RuntimeError: deliberate failure" in md
    assert "FAILED" in proc.stdout


def test_a_runner_that_dies_is_reported_with_its_log_tail(tuimon):
    # --no-flops: it counts its steps in a closure, which the FLOP count's extra step advances
    proc, session = tuimon(str(TEST_RECIPES / "hard_exit.py"), "--modes", "eager", "--steps", "10",
                           "--no-flops")
    assert proc.returncode == 1
    _, runs = runs_of(session)
    failed = runs["eager-fp32"]["failed"][0]
    assert failed["stage"] == "crash" and failed["returncode"] == 7
    assert "exited with code 7" in failed["message"]
    assert "about to die" in failed["traceback"]
    assert len(runs["eager-fp32"]["step"]) == 3
    assert (session / "summary.md").is_file()


def test_duration_limit_and_built_in_demo(tuimon):
    proc, session = tuimon(str(TEST_RECIPES / "slow_steps.py"), "--modes", "eager",
                           "--duration", "1.5", "--set", "sleep_ms=40", "--interval", "0.2")
    assert proc.returncode == 0, proc.stderr
    evs, runs = runs_of(session)
    assert runs["eager-fp32"]["finished"][0]["reason"] == "duration"
    assert 15 <= len(runs["eager-fp32"]["step"]) <= 38
    assert statistics.median(s["ms"] for s in runs["eager-fp32"]["step"]) >= 40
    # The supervisor sampled the runner's process tree while it ran (no GPU here: a note).
    samples = [e for e in evs if e["type"] == "sample" and "eager-fp32" in e["runs"]]
    assert len(samples) >= 5
    cpu = [e["runs"]["eager-fp32"]["cpu_percent"] for e in samples]
    assert all(c is None or 0 <= c <= 100 * (os.cpu_count() or 1) + 20 for c in cpu)
    assert max(e["runs"]["eager-fp32"]["rss"] or 0 for e in samples) > 50 * 2**20
    summary = json.loads((session / "summary.json").read_text())
    probes = summary["runs"][0]["probes"]
    assert probes["samples"] >= 3 and probes["cpu_mean"] is not None
    md = (session / "summary.md").read_text()
    assert "| CPU, process tree (100 % = 1 core) |" in md
    if not summary["gpu_available"]:
        assert "GPU metrics: n/a" in md

    demo, session = tuimon("--modes", "eager", "--steps", "20")
    assert demo.returncode == 0, demo.stderr
    assert "tuimon demo" in demo.stdout and session.name.endswith("-demo")


def test_parallel_schedule_splits_the_cores(tuimon):
    proc, session = tuimon(TINY, "--modes", "eager", "--precision", "fp32,amp",
                           "--schedule", "parallel", "--steps", "30")
    assert proc.returncode == 0, proc.stderr
    _, runs = runs_of(session)
    usable = len(os.sched_getaffinity(0))  # the cores the session may use (tuimon/cores.py)
    for run in ("eager-fp32", "eager-amp"):
        assert len(runs[run]["step"]) == 30
        assert runs[run]["run_started"][0]["threads"] == max(1, usable // 2)
    assert runs["eager-amp"]["run_started"][0]["amp_dtype"] == "bfloat16"


def test_ctrl_c_stops_children_and_keeps_the_measurements(tmp_path, inductor_cache):
    out = tmp_path / "sessions"
    cmd = [sys.executable, "-m", "tuimon", str(TEST_RECIPES / "slow_steps.py"), "--modes",
           "eager", "--steps", "100000", "--set", "sleep_ms=20", "--repeats", "1", "--out", str(out)]
    # A shell's background job inherits SIGINT ignored, and Python then installs no Ctrl-C handler:
    # give the CLI the terminal's default, whatever started this test.
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 60
    steps = 0
    while time.monotonic() < deadline and steps < 20:
        time.sleep(0.2)
        sessions = list(out.glob("*/events.jsonl"))
        steps = sessions[0].read_text().count('"type":"step"') if sessions else 0
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 130, stderr
    session = sessions[0].parent
    _, runs = runs_of(session)
    assert runs["eager-fp32"]["finished"][0]["reason"] == "stopped"
    assert len(runs["eager-fp32"]["step"]) >= 20
    child = runs["eager-fp32"]["run_started"][0]["pid"]
    with pytest.raises(ProcessLookupError):
        os.kill(child, 0)
    meta = json.loads((session / "meta.json").read_text())
    assert meta["status"] == "interrupted"
    assert "stopped" in (session / "summary.md").read_text()


def test_headless_tiny_mlp_records_host_samples_and_na_gpu_rows(tuimon):
    proc, session = tuimon(TINY, "--headless", "--modes", "eager", "--steps", "4000",
                           "--interval", "0.2")
    assert proc.returncode == 0, proc.stderr
    evs, _ = runs_of(session)
    samples = [e for e in evs if e["type"] == "sample" and "eager-fp32" in e["runs"]]
    assert samples and any(e["runs"]["eager-fp32"]["rss"] for e in samples)
    assert all(e["system"]["mem_total"] > 0 for e in samples)
    info = [e for e in evs if e["type"] == "probe_info" and "gpu_available" in e]
    assert len(info) == 1  # said once; a GPU's unsupported metrics come in one more probe_info
    assert all("unsupported" in e for e in evs if e["type"] == "probe_info" and e not in info)
    md = (session / "summary.md").read_text()
    rows = {line.split("|")[1].strip(): line.split("|")[2].strip()
            for line in md.splitlines() if line.startswith("| ")}
    assert rows["CPU, process tree (100 % = 1 core)"] != "–"
    if not info[0]["gpu_available"]:  # this CI machine: no NVIDIA driver
        for name in ("GPU util (mean)", "VRAM used (NVML peak)", "GPU temperature (max)",
                     "GPU power (mean)", "throttled"):
            assert rows[name] == "n/a"
        assert "GPU metrics: n/a" in md and "GPU metrics: n/a" in proc.stdout


def test_no_probes_means_no_samples(tuimon):
    proc, session = tuimon(TINY, "--modes", "eager", "--steps", "50", "--no-probes")
    assert proc.returncode == 0, proc.stderr
    evs, _ = runs_of(session)
    assert not [e for e in evs if e["type"] in ("sample", "probe_info")]


def test_interleaved_schedule_really_alternates(tuimon):
    proc, session = tuimon(str(TEST_RECIPES / "slow_steps.py"), "--modes", "eager",
                           "--precision", "fp32,amp", "--schedule", "interleave",
                           "--turn-steps", "10", "--steps", "40", "--set", "sleep_ms=5",
                           "--device", "cpu")  # no CUDA start-up stretching one build on a GPU box
    assert proc.returncode == 0, proc.stderr
    evs, runs = runs_of(session)
    order = [e["run"] for e in evs if e["type"] == "step"]
    blocks = [order[0]]
    for run in order[1:]:
        if run != blocks[-1]:
            blocks.append(run)
    # 4 turns of 10 steps each, alternating (the first turn goes to whichever built first).
    assert len(blocks) == 8 and set(blocks) == {"eager-fp32", "eager-amp"}
    assert all(a != b for a, b in zip(blocks, blocks[1:], strict=False))
    for run in ("eager-fp32", "eager-amp"):
        assert [s["i"] for s in runs[run]["step"]] == list(range(40))
    summary = json.loads((session / "summary.json").read_text())
    assert all(r["turns"] == 4 for r in summary["runs"])
    assert "in 4 turns" in (session / "summary.md").read_text()


def test_repeats_run_every_variant_once_per_round_and_combine_them(tuimon):
    proc, session = tuimon(str(TEST_RECIPES / "slow_steps.py"), "--modes", "eager",
                           "--precision", "fp32,amp", "--schedule", "interleave", "--repeats", "3",
                           "--turn-steps", "5", "--steps", "30", "--set", "sleep_ms=2")
    assert proc.returncode == 0, proc.stderr  # --steps 30: round 1 runs 30, rounds 2 and 3 10 each
    evs, runs = runs_of(session)
    rounds = {e["run"]: e["replicate"] for e in evs if e["type"] == "run_queued"}
    assert sorted(rounds.values()) == [1, 1, 2, 2, 3, 3]
    steps = [e for e in evs if e["type"] == "step"]
    # A round starts once the one before has ended: round numbers never go back.
    order = [rounds[e["run"]] for e in steps]
    assert order == sorted(order)
    for run in rounds:
        assert [s["i"] for s in runs[run]["step"]] == list(range(30 if rounds[run] == 1 else 10))
    summary = json.loads((session / "summary.json").read_text())
    assert [v["label"] for v in summary["variants"]] == ["eager/fp32", "eager/amp"]
    # A round that stepped beside other processes' load is left out of the combined row, with
    # its reason (on a shared machine); every round is either combined or left out for load.
    for v in summary["variants"]:
        busy = [p for p in v["left_out"] if p["why"]["code"] == "busy_round"]
        assert len(v["processes"]) + len(busy) == 3 and v["timing"]["steps"] == 50, v
        assert len(v["processes"]) >= 2
    md = (session / "summary.md").read_text()
    assert "median step per process" in md and "in 3 processes" in md
    assert "eager/amp #3" in proc.stdout  # the headless view has a row per process
