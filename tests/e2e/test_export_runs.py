"""tuimon export on a session just run (issue 44): tiny_mlp, eager against default, then both
exports as a user types them: the trace keeps to the trace-event format with a compile (its
phases nested) in the compiled run, and TensorBoard's own reader finds the session's step times."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from test_export_trace import check_format, names

ROOT = Path(__file__).resolve().parents[2]
TINY = str(ROOT / "recipes" / "tiny_mlp.py")
OURS = {"PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}


def evs_of(session, kind: str) -> list[dict]:
    return [e for e in map(json.loads, (session / "events.jsonl").read_text().splitlines())
            if e["type"] == kind]


def test_a_real_session_exported_both_ways(tuimon, tmp_path):
    proc, session = tuimon(TINY, "--headless", "--modes", "eager,default", "--steps", "40", env=OURS)
    assert proc.returncode == 0, proc.stderr
    trace, board = tmp_path / "trace.json", tmp_path / "tb"
    proc, _ = tuimon("export", str(session), "--trace", str(trace), "--tensorboard", str(board), env=OURS)
    assert proc.returncode in (0, 1), proc.stderr  # 1: tensorboardX missing (said, below)
    lines = proc.stdout.splitlines()
    assert lines[0].startswith(f"tuimon: wrote {trace} (") and "2 runs, 80 steps" in lines[0]
    doc = json.loads(trace.read_text())
    tracks = check_format(doc)
    named = names(doc)
    compiles = [e for (pid, tid), evs in tracks.items() if named[(pid, tid)] == "compiles"
                and named[pid] == "default-fp32" for e in evs]
    assert any(e["name"].startswith("compile ") for e in compiles)
    # each compile's phases as the compile event has them (a warm FX cache skips inductor's)
    said = {p for e in evs_of(session, "compile") if e["run"] == "default-fp32"
            for p, s in (e.get("phases") or {}).items() if s}
    assert said and said <= {e["name"] for e in compiles}, said
    if proc.returncode == 1:
        assert "pip install 'tensorboardX>=2.6'" in proc.stderr
        pytest.skip("tensorboardX is not installed (the dev extra has it)")
    accumulator = pytest.importorskip("tensorboard.backend.event_processing.event_accumulator")
    evs = [json.loads(line) for line in (session / "events.jsonl").read_text().splitlines()]
    for run in ("eager-fp32", "default-fp32"):
        acc = accumulator.EventAccumulator(str(board / run), size_guidance={"scalars": 0})
        acc.Reload()
        steps = [e for e in evs if e["type"] == "step" and e["run"] == run]
        assert [(s.step, s.value) for s in acc.Scalars("step/time_ms")] == [
            (e["i"], pytest.approx(e["ms"], rel=1e-6)) for e in steps]
