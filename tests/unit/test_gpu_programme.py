"""The GPU programme (bench/gpu/, issue 27) without a GPU: `all.sh all --dry-run` end to end
against the fake NVML, then report.py on what it left; the executor's limits (a hang stopped,
a budget kept, $OUT within what the device tool brings back); every stage's commands checked
against tuimon's own parsers; the compass on results of known shape.

The real runs are in tests/e2e/test_gpu_programme_runs.py."""

from __future__ import annotations

import json
import os
import sys
import tarfile
import time
from pathlib import Path

import pytest
from conftest import ROOT

sys.path.insert(0, str(ROOT / "bench/gpu"))

import claims  # noqa: E402
import collect  # noqa: E402
import execute  # noqa: E402
import programme  # noqa: E402
import report  # noqa: E402
import stages  # noqa: E402

OK = ("ok", "checked", "skipped")


def fake_stage(tmp_path: Path):
    py = sys.executable
    hang = Path(tmp_path / "hang.py")
    hang.write_text("import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\ntime.sleep(60)\n")

    def steps(c):
        return [stages.Step("hangs", [py, str(hang)], 1, "a step that ignores Ctrl-C", min_s=1),
                stages.Step("next", [py, "-c", "print('still here')"], 30, "the step after it", min_s=1),
                stages.Step("late", [py, "-c", "pass"], 30, "wants more than is left", min_s=60)]

    return steps


def test_a_hang_is_stopped_at_its_limit_and_the_stage_goes_on(tmp_path, monkeypatch):
    monkeypatch.setattr(execute, "GRACE_S", (0.3, 0.3, 0.3))
    monkeypatch.setitem(stages.STAGES, "fake", (fake_stage(tmp_path), "a fake stage", 1))
    t = time.monotonic()
    code = programme.run_stage("fake", tmp_path / "work", tmp_path / "out", 40.0, False)
    assert time.monotonic() - t < 15
    doc = json.loads((tmp_path / "out/fake.json").read_text())
    hangs, nxt, late = doc["steps"]
    assert hangs["status"] == "timed out after 1 s (stopped with SIGINT, SIGTERM)" and hangs["timed_out"]
    assert nxt["status"] == "ok" and "still here" in nxt["log_tail"]
    assert late["status"].startswith("skipped: the stage's budget is spent")
    assert code == 1  # a step timed out: said in the exit code too
    assert not execute.out_ok(tmp_path / "out")


def test_out_holds_what_the_device_tool_brings_back(tmp_path, monkeypatch):
    session = tmp_path / "work/sessions/s/x/20260101-000000-m"
    (session / "inductor-cache").mkdir(parents=True)
    (session / "inductor-cache/kernel.so").write_bytes(b"x" * 1000)
    (session / "summary.json").write_text("{}")
    (session / "huge.log").write_bytes(os.urandom(2000))
    monkeypatch.setattr(execute, "MAX_MEMBER", 1500)
    out = tmp_path / "out"
    out.mkdir()
    packed = execute.pack(out / "s.tar.gz", [session], tmp_path / "work")
    with tarfile.open(out / "s.tar.gz") as tar:
        assert tar.getnames() == ["sessions/s/x/20260101-000000-m/summary.json"]
    assert packed["left_out"] == ["sessions/s/x/20260101-000000-m/huge.log (2000 bytes)"]
    assert execute.out_ok(out) == []
    for i in range(8):
        (out / f"f{i}.svg").write_text("<svg/>")
    (out / "a/b/c").mkdir(parents=True)
    (out / "a/b/c/deep.txt").write_text("x")
    (out / "bad name.txt").write_text("x")
    problems = execute.out_ok(out)
    assert problems[0] == "11 files (at most 8 come back)"
    assert "a/b/c/deep.txt: more than 2 folders down" in problems
    assert any(p.startswith("bad name.txt: a name") for p in problems)


def test_every_command_of_every_stage_would_start(tmp_path):
    """Each step as it would run on the device (not its dry stand-in), through tuimon's own
    argument parsers, the test ids and the scripts' flags; steps waiting for a feature this
    build lacks are left out."""
    for name, (make, _, _) in stages.STAGES.items():
        ctx = stages.Ctx(ROOT, tmp_path, sys.executable, name)
        for step in make(ctx):
            if step.needs.startswith("feature:") and programme.needs(step.needs, ctx):
                continue
            assert programme.check_command(step.argv) is None, (name, step.name, step.argv)
            if step.dry_argv:
                assert programme.check_command(step.dry_argv) is None, (name, step.name)


@pytest.mark.parametrize(("argv", "expected"), [
    (["-m", "tuimon", "recipes/tiny_mlp.py", "--modes", "eager", "--bogus"], "unrecognized arguments"),
    (["-m", "tuimon", "recipes/tiny_mlp.py", "--steps", "0"], "--steps: must be between"),
    (["-m", "tuimon", "recipes/nope.py"], "recipe"),
    (["-m", "pytest", "tests/e2e/test_cuda_syncs.py::test_nope"], "has no test test_nope"),
    (["bench/trust.py", "--gpu-please"], "trust.py has no --gpu-please"),
])
def test_a_command_that_would_not_start_is_named(argv, expected, monkeypatch):
    monkeypatch.chdir(ROOT)
    assert expected in programme.check_command([sys.executable, *argv])


def run_row(mode, precision="amp", **kw):
    return {"run": f"{mode}-{precision}", "mode": mode, "precision": precision, "status": "done",
            "device": "cuda:0", "median_ms": 100.0, "measured": 150, **kw}


def stage_doc(stage, steps):
    return {"format": programme.FORMAT, "stage": stage, "what": stage, "dry_run": False,
            "budget_s": 560, "started": "2026-12-01T10:00:00+00:00", "wall_s": 300, "facts": {},
            "steps": [{"name": n, "status": "ok", "timeout_s": 200, "wall_s": 100, "result": r}
                      for n, r in steps.items()]}


def test_the_compass_on_known_results():
    gb = 2**30
    amp = stage_doc("amp", {
        "swin_t": {"runs": [run_row("eager"), run_row("default", speedup=1.02)]},
        "swin_b": {"runs": [run_row("eager", cuda_peak_allocated=20 * gb),
                            run_row("default", speedup=1.25, cuda_peak_allocated=18 * gb)]},
        "convnext_l": {"runs": [run_row("eager", cuda_peak_allocated=30 * gb),
                                run_row("default", speedup=1.01, cuda_peak_allocated=29 * gb)]},
    })
    check = stage_doc("check", {
        "trust": {"device": "cuda", "overhead": {"1ms": {"us": 3.0, "pct": 0.3, "runs_pct": [0.2, 0.3, 0.4]},
                               "10ms": {"us": 90.0, "pct": 0.9, "runs_pct": [0.8, 0.9, 1.0]}}},
        "oom": {"runs": [run_row("eager", "fp32", status="failed", failure_kind="oom-cuda",
                                 error="out of GPU memory (CUDA OOM): peak allocated 77.1 GiB")]},
    })
    got = {x["claim"]: x for x in claims.compass(claims.Results({"amp": amp, "check": check}))}
    assert got["overhead at ~1 ms GPU steps"]["verdict"] == claims.HOLDS
    assert got["overhead at ~10 ms GPU steps"]["verdict"] == claims.FAILS
    assert got["an OOM named with the allocator's peaks"]["verdict"] == claims.HOLDS
    speed = got["seed: large models faster with default (amp)"]
    assert speed["verdict"] == claims.FAILS and "convnext_l 1.01×" in speed["measured"]
    assert got["seed: VRAM lower with default (amp)"]["verdict"] == claims.FAILS  # convnext_l −3 %
    assert got["seed: the small model gains least"]["verdict"] == claims.HOLDS
    assert got["seed: ConvNeXt-L compiles in fp32"] == {
        "claim": "seed: ConvNeXt-L compiles in fp32", "expected": "default/fp32 runs and measures",
        "measured": "stage fp32 not run", "verdict": claims.NOT}
    text, _ = report.render({"amp": amp, "check": check}, [])
    assert "| swin_b | default/amp | 100 ms" in text and "1.25×" in text


def test_report_bad_input_is_one_line(tmp_path, capsys):
    assert report.main([str(tmp_path / "nope")]) == 2
    assert capsys.readouterr().err.count("\n") == 1
    (tmp_path / "other.json").write_text('{"format": "something else"}')
    assert report.main([str(tmp_path)]) == 2
    assert "no stage results" in capsys.readouterr().err


def test_flops_keep_the_runs_own_precision_and_failure():
    row = {"run": "default-amp", "precision": "amp", "failure": {"error": "boom"},
           "flops": {"precision": "bf16", "error": None, "phases": {"forward": {"flops": 1}}},
           "phases": {"step_phases": {"data": {}}}}
    got = collect.flat(row)
    assert got["precision"] == "amp" and got["error"] == "boom" and got["step_phases"] == {"data": {}}
    assert got["flops"]["precision"] == "bf16"
