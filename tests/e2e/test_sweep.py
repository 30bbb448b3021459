"""Real sweeps: `--set` axes raced with real runs (tiny_mlp, few steps, the shared Inductor
cache), a script's knobs in its command and environment, --budget, and the runner's duration
that leaves compiles aside."""

from __future__ import annotations

import csv
import json
import sys

from conftest import RECIPES, SCRIPTS, TEST_RECIPES, runner_events
from test_end_to_end import runs_of

TINY = str(RECIPES / "tiny_mlp.py")


def test_a_set_axis_sweep_races_every_value(tuimon):
    proc, session = tuimon("sweep", TINY, "--headless", "--modes", "eager,default,reduce-overhead",
                           "--precision", "fp32", "--set", "width=48,256", "--set", "widht=3",
                           "--steps", "60", "--turn-steps", "15", "--no-probes", timeout=600)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "skipped: reduce-overhead/fp32 · width=48: CUDA graphs need a GPU" in out
    evs, runs = runs_of(session)
    assert set(runs) == {"eager-fp32-width_48", "default-fp32-width_48",
                         "eager-fp32-width_256", "default-fp32-width_256"}
    for run, kinds in runs.items():
        width = run.rsplit("_", 1)[1]
        assert kinds["run_queued"][0]["axes"] == {"width": width}
        assert kinds["run_started"][0]["recipe"] == f"tiny_mlp(w{width})"  # the recipe read it
        assert kinds["run_started"][0]["extra"] == {"widht": "3", "width": width}
        assert kinds["finished"][0]["reason"] == "steps"
        assert any("never read --set widht" in w["text"] for w in kinds["warning"])
    started = next(e for e in evs if e["type"] == "session_started")
    assert started["axes"] == {"width": ["48", "256"]} and started["sweep"] is True
    assert [s["label"] for s in started["skipped"]] == ["reduce-overhead/fp32 · width=48",
                                                       "reduce-overhead/fp32 · width=256"]
    md = (session / "summary.md").read_text().splitlines()
    assert md[2].startswith("Verdict: ") and md[2] in out  # the answer first, in both
    assert out.index("Verdict: ") < out.index("tuimon summary")
    header = next(line for line in md if line.startswith("|  |"))
    assert header == ("|  | eager/fp32 · width=48 | default/fp32 · width=48 | eager/fp32 · width=256 "
                      "| default/fp32 · width=256 |")
    axis_row = next(line for line in md if line.startswith("| vs axis baseline |"))
    # eager at width=256 against its axis baseline: a ratio, or "cannot tell" when this machine's
    # load spread its steps too far (one process a variant; seen under the full suite's load)
    assert "axis baseline" in axis_row and ("× eager/fp32 · width=48" in axis_row
                                            or "against eager/fp32 · width=48: cannot tell" in axis_row)
    assert any(line.startswith("- reduce-overhead/fp32 · width=256: skipped: CUDA graphs need a GPU")
               for line in md)
    summary = json.loads((session / "summary.json").read_text())
    assert summary["verdict"]["line"] == md[2] and summary["verdict"]["reference"] == "eager/fp32 · width=48"
    assert summary["axes"] == {"width": ["48", "256"]}
    row = next(r for r in summary["runs"] if r["run"] == "default-fp32-width_256")
    vs = row["compare"]
    assert row["label"] == "default/fp32 · width=256" and vs["baseline"] == "eager/fp32 · width=256"
    assert vs["axis_baseline"] == "default/fp32 · width=48" and vs["axis_speedup"] > 0
    assert abs(row["loss"]["loss_gap"]) < 0.01  # compile trains as eager does
    with open(session / "steps.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert {(r["run"], r["width"]) for r in rows} == {(run, run.rsplit("_", 1)[1]) for run in runs}
    meta = json.loads((session / "meta.json").read_text())
    assert {"run": "eager-fp32-width_256", "mode": "eager", "precision": "fp32",
            "axes": {"width": "256"}} in meta["variants"]


def test_a_script_gets_each_knob_in_its_command_or_environment(tuimon):
    proc, session = tuimon("run", "--headless", "--modes", "eager", "--steps", "20", "--no-probes",
                           "--set", "width=8,24", "--set", "BS=4", "--",
                           sys.executable, str(SCRIPTS / "env_knob.py"), "--width", "{width}")
    assert proc.returncode == 0, proc.stderr
    _, runs = runs_of(session)
    assert set(runs) == {"eager-script-width_8", "eager-script-width_24"}
    for width in ("8", "24"):
        log = (session / "logs" / f"eager-script-width_{width}.log").read_text()
        assert f"knobs: width={width} batch=4" in log
        started = runs[f"eager-script-width_{width}"]["run_started"][0]
        assert started["script"][-2:] == ["--width", width]
    md = (session / "summary.md").read_text()
    assert "| eager/script · width=8 | eager/script · width=24 |" in md


def test_a_budget_shares_the_time_between_the_runs(tuimon):
    proc, session = tuimon("sweep", TINY, "--headless", "--modes", "eager", "--precision", "fp32",
                           "--set", "width=32,48", "--budget", "35s", "--no-probes", timeout=300)
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((session / "summary.json").read_text())
    plan = summary["budget"]
    assert plan["seconds"] == 35 and plan["compile_s"] == 0 and 10 <= plan["step_s"] <= 15
    assert f"budget 0.6 min: each of 2 runs steps for {plan['step_s']:.1f} s" in proc.stdout
    _, runs = runs_of(session)
    for kinds in runs.values():
        end = kinds["finished"][0]
        assert end["reason"] == "duration"
        assert plan["step_s"] - 0.5 <= end["seconds"] - end["paused_s"] <= plan["step_s"] + 2
    assert summary["wall_s"] < 35 + 10  # the budget, and the last process's exit
    assert "- --budget 35.0 s; the sweep took" in (session / "summary.md").read_text()


def test_a_steady_duration_leaves_compiles_aside(tmp_path, inductor_cache):
    """steady_duration (a sweep's runs): --duration counts stepping time, not the compile."""
    rc, got = runner_events(inductor_cache, timeout=300, recipe=TINY, run="r", mode="default",
                            device="cpu", duration=1.5, steady_duration=True)
    assert rc == 0
    end = next(e for e in got if e["type"] == "finished")
    assert end["reason"] == "duration" and end["compile_s"] > 0.3
    assert end["seconds"] - end["compile_s"] >= 1.5
    steady = sum(s["ms"] for s in got if s["type"] == "step" and not s.get("compile_ms")) / 1000
    assert steady >= 1.0  # stepping, not compiling, filled the duration


def test_a_variant_out_of_memory_while_building_is_skipped_not_failed(tuimon):
    proc, session = tuimon("sweep", str(TEST_RECIPES / "too_big.py"), "--headless", "--modes", "eager",
                           "--precision", "fp32", "--set", "size=small,huge", "--steps", "20",
                           "--no-probes")
    assert proc.returncode == 0, proc.stderr
    _, runs = runs_of(session)
    assert runs["eager-fp32-size_huge"]["failed"][0]["kind"] == "oom-host"
    assert runs["eager-fp32-size_small"]["finished"][0]["reason"] == "steps"  # the other one ran on
    summary = json.loads((session / "summary.json").read_text())
    huge = next(r for r in summary["runs"] if r["run"] == "eager-fp32-size_huge")
    assert huge["status"] == "skipped"
    assert summary["skipped"] == [{"label": "eager/fp32 · size=huge", "run": "eager-fp32-size_huge",
                                   "reason": huge["failure"]["error"]}]
    assert "out of host memory" in huge["failure"]["error"]
    md = (session / "summary.md").read_text()
    assert "| status | done | skipped: out of host memory" in md
    assert "- eager/fp32 · size=huge: skipped: out of host memory" in md
