"""tuimon export --tensorboard (issue 44): each run a TensorBoard run, read back with
TensorBoard's own reader (EventAccumulator): the step times are the session's, throughput and
phases follow from them, compiles sit at the step they happened in, the verdict and summary.md
are there as text; a run's directory already written is not mixed into; tensorboardX missing is
one line and exit 1; torch is never imported."""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from synthetic_session import T0, session
from test_export_trace import extras

from tuimon import events
from tuimon.analysis import load_session
from tuimon.cli import main
from tuimon.report import export as summary_export
from tuimon.report import verdict_text
from tuimon.report.html.data import read

pytest.importorskip("tensorboardX", reason="tensorboardX is in the dev extra (tuimon[tensorboard])")
accumulator = pytest.importorskip("tensorboard.backend.event_processing.event_accumulator",
                                  reason="tensorboard is in the dev extra")
DATA = Path(__file__).parents[1] / "data"


def board(path: Path) -> accumulator.EventAccumulator:
    acc = accumulator.EventAccumulator(str(path), size_guidance={"scalars": 0, "tensors": 0})
    acc.Reload()
    return acc


def scalars(acc, tag: str) -> list[tuple[int, float]]:
    return [(s.step, s.value) for s in acc.Scalars(tag)]


def said(acc, tag: str) -> str:
    return acc.Tensors(f"{tag}/text_summary")[-1].tensor_proto.string_val[0].decode()


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory) -> Path:
    path = session(tmp_path_factory.mktemp("tb"), "s", steps=300, turn=100)
    evs = [json.loads(line) for line in (path / "events.jsonl").read_text().splitlines()]
    evs = sorted(evs[:-1] + extras(T0), key=lambda e: e["t"]) + evs[-1:]
    (path / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in evs))
    return path


@pytest.fixture(scope="module")
def exported(synthetic, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("boards") / "tb"
    assert main(["export", str(synthetic), "--tensorboard", str(out)]) == 0
    return out


def test_each_run_is_a_run_its_step_times_the_sessions(synthetic, exported):
    evs = [json.loads(line) for line in (synthetic / "events.jsonl").read_text().splitlines()]
    assert sorted(p.name for p in exported.iterdir()) == ["default-fp32", "eager-fp32"]
    for run in ("eager-fp32", "default-fp32"):
        steps = [e for e in evs if e["type"] == events.STEP and e["run"] == run]
        acc = board(exported / run)
        assert scalars(acc, "step/time_ms") == [(e["i"], pytest.approx(e["ms"], rel=1e-6)) for e in steps]
        assert scalars(acc, "step/loss") == [(e["i"], pytest.approx(e["loss"], rel=1e-6)) for e in steps]
        assert scalars(acc, "step/steps_per_s") == [(e["i"], pytest.approx(1000 / e["ms"], rel=1e-6))
                                                    for e in steps]
        assert scalars(acc, "step/samples_per_s") == [(e["i"], pytest.approx(32_000 / e["ms"], rel=1e-6))
                                                      for e in steps]
        assert scalars(acc, "phase/forward_ms") == [(e["i"], pytest.approx(e["ph"][1] / 1000, rel=1e-6))
                                                    for e in steps]
        assert [s.wall_time for s in acc.Scalars("step/time_ms")] == pytest.approx([e["t"] for e in steps])


def test_compiles_sit_at_the_step_they_happened_in_and_in_a_table(synthetic, exported):
    evs = [json.loads(line) for line in (synthetic / "events.jsonl").read_text().splitlines()]
    acc = board(exported / "default-fp32")
    expected: dict[int, list[float]] = {}
    last = -1
    for e in evs:
        if e["type"] == events.STEP and e["run"] == "default-fp32":
            last = e["i"]
        elif e["type"] == events.COMPILE:
            expected.setdefault(last + 1, []).append(e["seconds"])
    assert scalars(acc, "compile/seconds") == [(k, pytest.approx(sum(v))) for k, v in expected.items()]
    assert scalars(acc, "compile/count") == [(k, len(v)) for k, v in expected.items()]
    table = said(acc, "tuimon/compiles")
    phases = "dynamo 0.50 s · aot 0.40 s · inductor 0.30 s · codegen 0.20 s"
    assert f"| 0/0 | forward | 1.50 s | {phases} |" in table
    assert "| 0/2 | validation |" in table
    assert "compile/seconds" not in board(exported / "eager-fp32").Tags()["scalars"]


def test_the_verdict_and_the_summary_are_there_as_text(synthetic, exported):
    meta, _, summary = load_session(synthetic)
    for run in ("eager-fp32", "default-fp32"):
        acc = board(exported / run)
        assert said(acc, "tuimon/verdict") == verdict_text.line(summary.verdict)
        assert said(acc, "tuimon/summary") == summary_export.to_markdown(meta, summary)


def test_a_jobs_step_is_its_joined_step(tmp_path):
    """A torchrun job's run holds the job's steps as the statistics saw them (the slowest rank's)."""
    path = Path(shutil.copytree(DATA / "session_ranks_tiny_mlp", tmp_path / "ranks"))
    assert main(["export", str(path), "--tensorboard", str(tmp_path / "tb")]) == 0
    joined = read(path).steps
    for run, steps in joined.items():
        acc = board(tmp_path / "tb" / run)
        assert scalars(acc, "step/time_ms") == [(s["i"], pytest.approx(s["ms"], rel=1e-6)) for s in steps]


def test_a_script_session_with_its_validation_compiles(tmp_path):
    path = Path(shutil.copytree(DATA / "session_script_fabric_lm", tmp_path / "fab"))
    (path / "events.jsonl").write_bytes(gzip.decompress((path / "events.jsonl.gz").read_bytes()))
    (path / "events.jsonl.gz").unlink()
    assert main(["export", str(path), "--tensorboard", str(tmp_path / "tb")]) == 0
    acc = board(tmp_path / "tb" / "default-script")
    assert len(acc.Scalars("step/time_ms")) == 60 and "phase/eval_ms" in acc.Tags()["scalars"]
    assert "| validation |" in said(acc, "tuimon/compiles")


def test_an_earlier_export_is_not_mixed_into(synthetic, tmp_path, capsys):
    out = tmp_path / "tb"
    assert main(["export", str(synthetic), "--tensorboard", str(out)]) == 0
    (out / "eager-fp32" / "notes.txt").write_text("theirs")
    capsys.readouterr()
    trace = tmp_path / "t.json"
    assert main(["export", str(synthetic), "--tensorboard", str(out), "--trace", str(trace)]) == 2
    err = capsys.readouterr().err
    assert "holds event files already" in err and "--overwrite" in err and err.count("\n") == 1
    assert not trace.exists()  # refused before anything was written
    assert main(["export", str(synthetic), "--tensorboard", str(out), "--overwrite"]) == 0
    assert len(list((out / "eager-fp32").glob("events.out.tfevents.*"))) == 1
    assert (out / "eager-fp32" / "notes.txt").read_text() == "theirs"
    (tmp_path / "file").write_text("x")
    assert main(["export", str(synthetic), "--tensorboard", str(tmp_path / "file")]) == 2
    assert "is a file" in capsys.readouterr().err


def test_tensorboardx_missing_is_one_line_and_exit_1(synthetic, tmp_path, monkeypatch, capsys):
    for name in [m for m in sys.modules if m.split(".")[0] == "tensorboardX"] + ["tensorboardX"]:
        monkeypatch.setitem(sys.modules, name, None)  # as if never installed (imported ones too)
    assert main(["export", str(synthetic), "--tensorboard", str(tmp_path / "tb")]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "pip install 'tensorboardX>=2.6'" in err and "tuimon[tensorboard]" in err
    assert not (tmp_path / "tb").exists()


def test_neither_export_imports_torch(synthetic, tmp_path):
    code = (f"import sys; from tuimon.cli import main; "
            f"rc = main(['export', {str(synthetic)!r}, '--tensorboard', {str(tmp_path / 'tb')!r}, "
            f"'--trace', {str(tmp_path / 't.json')!r}]); print(rc, 'torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.splitlines()[-1] == "0 False"
