"""tuimon export --trace (issue 44): a session as one Chrome trace-event timeline, checked against
the trace-event format on synthetic sessions (tests/synthetic_session.py, with compiles, graph
breaks, recompiles, a validation pass's compile, a capture, warnings and GPU samples added) and
on the recorded ones: every event has what its phase needs, X slices nest in their step, each
track is in time order, the JSON loads. The trace in the trace viewer of chrome://tracing:
tests/e2e/test_export_browser.py."""

from __future__ import annotations

import gzip
import io
import json
import shutil
import time
from pathlib import Path

import pytest
from synthetic_session import T0, session

from tuimon import events
from tuimon.cli import main
from tuimon.report import trace

DATA = Path(__file__).parents[1] / "data"
NEEDS = {"X": {"name", "ts", "dur", "pid", "tid"}, "i": {"name", "ts", "pid", "tid", "s"},
         "C": {"name", "ts", "pid", "args"}, "M": {"name", "pid", "args"}}


def check_format(doc: dict) -> dict[tuple[int, int], list[dict]]:
    """The trace-event format's rules, as a viewer reads them; returns each track's events."""
    assert doc["displayTimeUnit"] == "ms" and isinstance(doc["traceEvents"], list)
    tracks: dict[tuple[int, int], list[dict]] = {}
    for e in doc["traceEvents"]:
        assert "ph" in e and NEEDS[e["ph"]] <= set(e), e
        assert isinstance(e["pid"], int) and isinstance(e.get("tid", 0), int)
        if e["ph"] == "M":
            continue
        assert isinstance(e["ts"], int) and e["ts"] >= 0, e
        if e["ph"] == "X":
            assert isinstance(e["dur"], int) and e["dur"] >= 0, e
        if e["ph"] == "C":
            assert all(isinstance(v, (int, float)) for v in e["args"].values()), e
            continue
        tracks.setdefault((e["pid"], e["tid"]), []).append(e)
    for evs in tracks.values():
        assert [e["ts"] for e in evs] == sorted(e["ts"] for e in evs)  # each track in time order
        stack: list[dict] = []  # X slices nest: each inside the open one, or after it ended
        for e in (e for e in evs if e["ph"] == "X"):
            while stack and stack[-1]["ts"] + stack[-1]["dur"] <= e["ts"] and not (
                    e["dur"] == 0 and e["ts"] == stack[-1]["ts"]):
                stack.pop()
            if stack:
                top = stack[-1]
                assert e["ts"] + e["dur"] <= top["ts"] + top["dur"], (top, e)
            stack.append(e)
    return tracks


def names(doc: dict) -> dict:
    """(pid, tid) -> thread name; pid -> process name."""
    out = {}
    for e in doc["traceEvents"]:
        if e["ph"] == "M" and e["name"] == "thread_name":
            out[(e["pid"], e["tid"])] = e["args"]["name"]
        elif e["ph"] == "M" and e["name"] == "process_name":
            out[e["pid"]] = e["args"]["name"]
    return out


def extras(t: float) -> list[dict]:
    """What a compiled run adds: its compiles (one in a validation pass), a graph break, a
    recompile, a capture, a warning, a user's pause; session-wide: a warning."""
    run = "default-fp32"
    return [
        {"type": "compile", "t": t + 2.0, "run": run, "compile_id": "0/0", "forward": True, "seconds": 1.5,
         "phases": {"dynamo": 0.5, "aot": 0.4, "inductor": 0.3, "codegen": 0.2}, "graph_ops": 12},
        {"type": "compile", "t": t + 3.0, "run": run, "compile_id": "0/0", "forward": False, "seconds": 0.8,
         "phases": {"dynamo": 0.0, "aot": 0.3, "inductor": 0.2, "codegen": 0.2}},
        {"type": "graph_break", "t": t + 1.0, "run": run, "compile_id": "0/0", "file": "model.py", "line": 7,
         "reason": "Tensor.item()"},
        {"type": "recompile", "t": t + 4.0, "run": run, "compile_id": "0/1",
         "reasons": ["0/0: tensor 'x' size mismatch at index 0. expected 32, actual 31"]},
        {"type": "compile", "t": t + 5.0, "run": run, "compile_id": "0/2", "forward": True, "seconds": 0.4,
         "phases": {"dynamo": 0.4}, "validation": True, "outside": "validation"},
        {"type": "profile", "t": t + 6.0, "run": run, "state": "started", "capture": 1, "source": "auto"},
        {"type": "profile", "t": t + 6.5, "run": run, "state": "done", "capture": 1, "source": "auto",
         "trace": "profiles/x.json", "active_steps": [11, 12]},
        {"type": "warning", "t": t + 7.0, "run": run, "text": "recompiled 1 times in steady state"},
        {"type": "control", "t": t + 7.5, "run": run, "action": "pause"},
        {"type": "warning", "t": t + 8.0, "text": "host memory is low"},
    ]


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory) -> Path:
    path = session(tmp_path_factory.mktemp("trace"), "s", steps=400, gpu=True, turn=100)
    evs = [json.loads(line) for line in (path / "events.jsonl").read_text().splitlines()]
    evs = sorted(evs[:-1] + extras(T0), key=lambda e: e["t"]) + evs[-1:]
    (path / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in evs))
    return path


@pytest.fixture(scope="module")
def doc(synthetic, tmp_path_factory) -> dict:
    out = tmp_path_factory.mktemp("out") / "s.json"
    assert main(["export", str(synthetic), "--trace", str(out)]) == 0
    return json.loads(out.read_text())


def test_the_trace_keeps_to_the_trace_event_format(doc):
    tracks = check_format(doc)
    named = names(doc)
    assert named[1] == "session" and {named[2], named[3]} == {"eager-fp32", "default-fp32"}
    assert all(key in named for key in tracks)  # every track is named
    assert doc["otherData"]["t0"] == T0 and doc["otherData"]["steps"] == 800


def test_each_step_is_a_slice_of_its_length_ending_at_its_time_its_parts_end_to_end_inside(synthetic, doc):
    steps = [json.loads(line) for line in (synthetic / "events.jsonl").read_text().splitlines()]
    steps = [e for e in steps if e["type"] == events.STEP and e["run"] == "eager-fp32"]
    named = names(doc)
    track = next(k for k, v in named.items() if v == "steps" and named[k[0]] == "eager-fp32")
    evs = [e for e in doc["traceEvents"] if (e["pid"], e.get("tid")) == track]
    slices = [e for e in evs if e["name"] == "step"]
    assert [s["args"]["i"] for s in slices] == [e["i"] for e in steps]
    for s, e in zip(slices, steps, strict=True):
        assert s["dur"] == round(e["ms"] * 1000) and s["args"]["ms"] == e["ms"]
        # at its time; the synthetic steps are back to back, so rounding may push one a few µs
        assert -1 < s["ts"] + s["dur"] - (e["t"] - T0) * 1e6 < 50
        assert s["args"]["parts"] == trace.PARTS_NOTE
    first = evs[:6]  # the first step, then its parts in STEP_PHASES' order, end to end, then other
    assert [e["name"] for e in first] == ["step", "data", "forward", "backward", "optimizer", "other"]
    assert first[1]["ts"] == first[0]["ts"]
    for a, b in zip(first[1:], first[2:], strict=False):
        assert b["ts"] == a["ts"] + a["dur"]
    assert first[-1]["ts"] + first[-1]["dur"] == first[0]["ts"] + first[0]["dur"]


def test_phases_and_turns_are_slices_back_to_back(doc):
    named = names(doc)
    track = next(k for k, v in named.items() if v == "phases" and named[k[0]] == "eager-fp32")
    phases = [e for e in doc["traceEvents"] if (e["pid"], e.get("tid")) == track and e["ph"] == "X"]
    assert [p["name"] for p in phases[:4]] == ["warmup", "steady", "paused", "steady"]
    assert phases[2]["args"] == {"turn": True}
    for a, b in zip(phases, phases[1:], strict=False):
        assert a["ts"] + a["dur"] == b["ts"]


def test_compiles_nest_their_phases_apart_from_a_validation_pass_with_breaks_and_recompiles(doc):
    named = names(doc)
    by_track = {}
    for e in doc["traceEvents"]:
        if e["ph"] != "M" and named.get(e["pid"]) == "default-fp32" and "tid" in e:
            by_track.setdefault(named.get((e["pid"], e["tid"])), []).append(e)
    training = [e for e in by_track["compiles"] if e["ph"] == "X"]
    assert [e["name"] for e in training] == ["compile 0/0", "dynamo", "aot", "inductor", "codegen",
                                             "compile 0/0 (backward)", "aot", "inductor", "codegen"]
    assert training[0]["dur"] == 1_500_000 and training[1]["dur"] == 500_000
    assert training[0]["ts"] == 500_000 and training[0]["args"]["graph_ops"] == 12
    said = [e for e in by_track["compiles"] if e["ph"] == "i"]  # at their times, the break mid-compile
    assert [(e["name"], e["ts"]) for e in said] == [("graph break", 1_000_000), ("recompile", 4_000_000)]
    assert said[0]["args"]["reason"] == "Tensor.item()" and said[0]["args"]["line"] == 7
    assert "size mismatch" in said[1]["args"]["reasons"][0]
    assert [e["name"] for e in by_track["compiles: validation passes"]] == ["compile 0/2", "dynamo"]
    capture = by_track["profiler captures"]
    assert capture[0]["name"] == "capture 1" and capture[0]["dur"] == 500_000
    assert capture[0]["args"]["trace"] == "profiles/x.json"
    said = [e["name"] for e in by_track["phases"] if e["ph"] == "i"]
    assert said == ["warning", "control: pause"]
    session_said = [e for e in doc["traceEvents"] if e["pid"] == 1 and e["ph"] == "i"]
    assert [e["args"]["text"] for e in session_said] == ["host memory is low"]


def test_samples_are_counters_per_run_and_per_gpu(doc):
    counters = {(e["pid"], e["name"]) for e in doc["traceEvents"] if e["ph"] == "C"}
    assert {(2, "CPU"), (2, "RSS"), (3, "CPU"), (1, "system CPU"), (1, "GPU 0 util"), (1, "GPU 1 memory"),
            (1, "GPU 0 temperature"), (1, "GPU 0 power")} <= counters
    rss = next(e for e in doc["traceEvents"] if e["ph"] == "C" and e["name"] == "RSS")
    assert rss["args"] == {"MiB": 1024.0}


def test_a_job_has_tracks_per_rank_and_a_script_session_its_validation_compiles(tmp_path):
    for name in ("session_ranks_tiny_mlp", "session_script_fabric_lm"):
        path = Path(shutil.copytree(DATA / name, tmp_path / name))
        if (packed := path / "events.jsonl.gz").exists():
            (path / "events.jsonl").write_bytes(gzip.decompress(packed.read_bytes()))
            packed.unlink()
        out = tmp_path / f"{name}.json"
        assert main(["export", str(path), "--trace", str(out)]) == 0
        doc = json.loads(out.read_text())
        check_format(doc)
        threads = set(names(doc).values())
        counters = {e["name"] for e in doc["traceEvents"] if e["ph"] == "C"}
        assert {"CPU", "RSS"} <= counters
        # the runner's memory events
        assert ("rank 0 peak RSS" if "ranks" in name else "peak RSS") in counters
        if "ranks" in name:
            assert {"rank 0 · steps", "rank 1 · steps", "rank 0 · compiles", "rank 1 · phases"} <= threads
        else:
            assert {"compiles", "compiles: validation passes", "profiler captures"} <= threads


def test_a_step_that_would_start_before_the_last_ended_starts_when_it_ended():
    t = trace.Trace()
    evs = [{"type": "session_started", "t": 100.0},
           {"type": "step", "t": 101.0, "run": "r", "i": 0, "ms": 500.0},
           {"type": "step", "t": 101.4, "run": "r", "i": 1, "ms": 500.0}]  # the clocks disagree
    out = [x for e in evs for x in t.add(e)]
    assert [(x["ts"], x["dur"]) for x in out] == [(500_000, 500_000), (1_000_000, 500_000)]
    assert out[1]["args"]["ms"] == 500.0


def test_parts_longer_than_their_step_are_cut_at_its_end():
    t = trace.Trace()
    t.add({"type": "session_started", "t": 100.0})
    out = t.add({"type": "step", "t": 101.0, "run": "r", "i": 0, "ms": 10.0, "ph": [0, 8000, 5000, None]})
    assert [(x["name"], x["dur"]) for x in out] == [("step", 10_000), ("forward", 8000), ("backward", 2000)]


def test_steps_stream_out_as_they_come_none_held():
    """Steps are written as they come, none held: memory stays flat however many (100,000 steps
    take ~6 s on the 2-core CI machine; 20,000 here)."""
    def stream():
        yield {"type": "session_started", "t": 0.0}
        for i in range(20_000):
            yield {"type": "step", "t": 1.0 + i * 0.01, "run": "eager", "i": i, "ms": 9.5, "n": 32,
                   "loss": 1.0, "phase": "steady", "ph": [100, 4000, 4000, 1000]}
    started = time.monotonic()
    buf = io.StringIO()
    t, n = trace.write(stream(), buf, {})
    assert t.steps == 20_000 and n > 120_000 and not t._held
    assert time.monotonic() - started < 30
    assert len(json.loads(buf.getvalue())["traceEvents"]) == n


def test_bad_input_is_one_line_and_exit_2(synthetic, tmp_path, capsys):
    cases = [
        (["export", str(synthetic)], "say what to write"),
        (["export", str(tmp_path / "none"), "--trace", str(tmp_path / "t.json")], "no such directory"),
        (["export", str(synthetic), "--trace", str(tmp_path)], "is a directory"),
        (["export", str(synthetic), "--trace", str(tmp_path / "no" / "t.json")], "no such directory"),
    ]
    (tmp_path / "old.json").write_text("theirs")
    cases.append((["export", str(synthetic), "--trace", str(tmp_path / "old.json")],
                  "--overwrite replaces it"))
    for argv, said in cases:
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert said in err and err.count("\n") == 1, err
    assert (tmp_path / "old.json").read_text() == "theirs"  # theirs, left alone
    assert main(["export", str(synthetic), "--trace", str(tmp_path / "old.json"), "--overwrite"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"tuimon: wrote {tmp_path / 'old.json'}") and "ui.perfetto.dev" in out
    assert not list(tmp_path.glob("*.tmp"))


def test_a_torn_line_is_skipped_and_said(synthetic, tmp_path, capsys):
    torn = Path(shutil.copytree(synthetic, tmp_path / "torn"))
    with open(torn / "events.jsonl", "a") as f:
        f.write('{"type": "step", "t": 18000')
    assert main(["export", str(torn), "--trace", str(tmp_path / "t.json")]) == 0
    err = capsys.readouterr().err
    assert err == "tuimon: warning: events.jsonl: 1 unreadable line skipped (torn write?)\n"
    check_format(json.loads((tmp_path / "t.json").read_text()))
