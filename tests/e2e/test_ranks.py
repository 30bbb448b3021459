"""Real torchrun jobs under tuimon, on the CPU (gloo, 2 ranks, tiny models): an unmodified DDP
script with a slow rank, a recipe as 2 ranks (--nproc 2), a rank that raises, Ctrl-C, and a
two-node job on loopback read as one job. torchrun's start-up costs seconds a job: each test
runs as few jobs and steps as it can. With two GPUs at hand, the DDP script runs with nccl."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from conftest import RECIPES, SCRIPTS
from test_crashes import descendants, survivors
from test_end_to_end import runs_of

from tuimon.control.job_runs import _bad_exit
from tuimon.envvars import EXIT_WAIT_S as EXIT_WAIT_ENV
from tuimon.sessiondir import store
from tuimon.sessiondir.run_state import RankState

PY = sys.executable
TORCHRUN = [PY, "-m", "torch.distributed.run"]
DDP = str(SCRIPTS / "ddp_train.py")


def by_rank(kinds: dict, kind: str) -> dict[int, list[dict]]:
    out: dict[int, list[dict]] = {}
    for e in kinds.get(kind, []):
        if e.get("rank") is not None:
            out.setdefault(e["rank"], []).append(e)
    return out


def job_end(kinds: dict, kind: str) -> dict:
    (e,) = [e for e in kinds.get(kind, []) if e.get("rank") is None]
    return e


def test_an_unmodified_ddp_script_its_ranks_turns_and_a_straggler(tuimon):
    # Rank 1 loads its data slower (0.6 ms a sample, 32 a batch); both variants' jobs are alive
    # at once, taking turns of 20 steps (the compiled variant runs as eager: no compile to wait for).
    proc, session = tuimon("run", "--headless", "--modes", "eager,default", "--no-auto-compile",
                           "--steps", "60", "--turn-steps", "20", "--", *TORCHRUN, "--standalone",
                           "--nproc-per-node", "2", DDP, "--slow-rank", "1", "--slow-ms", "0.6")
    assert proc.returncode == 0, proc.stderr
    assert "rank 0 of 2 (gloo)" in proc.stdout
    _, runs = runs_of(session)
    assert set(runs) == {"eager-script", "default-script"}
    for run, kinds in runs.items():
        started = by_rank(kinds, "run_started")
        assert sorted(started) == [0, 1]
        assert {e[0]["backend"] for e in started.values()} == {"gloo"}
        assert {e[0]["world_size"] for e in started.values()} == {2}
        assert len({e[0]["job_id"] for e in started.values()}) == 1  # torchrun's rendezvous id
        steps = by_rank(kinds, "step")
        for rank in (0, 1):
            assert [s["i"] for s in steps[rank]] == list(range(60))
            assert all(s.get("pre_ms") is not None for s in steps[rank][1:])
        # Every turn ended at the same step on both ranks: 0 (the first wait), 20, 40.
        pauses = by_rank(kinds, "phase")
        ats = {r: [e["at"] for e in p if e["phase"] == "paused"] for r, p in pauses.items()}
        assert ats[0] == ats[1] == [0, 20, 40], ats
        assert job_end(kinds, "finished")["reason"] == "steps"
        log = (session / "logs" / f"{run}.log").read_text()
        assert "rank 0: cleanup done" in log and "rank 1: cleanup done" in log
        # The CPU probes see torchrun's workers in the job's tree, and each rank on its own.
        samples = [s for s in runs_of(session)[0] if s["type"] == "sample" and run in s["runs"]]
        assert max(s["runs"][run]["descendants"] or 0 for s in samples) >= 2
        assert any(set(s["runs"][run].get("ranks", {})) == {"0", "1"} for s in samples)
    summary = json.loads((session / "summary.json").read_text())
    for row in summary["runs"]:
        job = row["job"]
        assert job["world_size"] == 2 and [x["rank"] for x in job["ranks"]] == [0, 1]
        assert job["stragglers"][0]["rank"] == 1 and job["stragglers"][0]["slower_pct"] > 30, row
        assert job["skew_pct"] > 30
    md = (session / "summary.md").read_text()
    assert "| straggler | rank 1: " in md and "| ranks (world size) | 2 ranks · gloo · 1 host |" in md
    csv = (session / "steps.csv").read_text().splitlines()
    at = csv[0].split(",").index("rank")
    assert ",rank,pre_ms," in csv[0] and {row.split(",")[at] for row in csv[1:]} == {"0", "1"}


def test_a_recipe_as_two_ranks_under_ddp(tuimon):
    # Time-based turns (0.5 s): the supervisor ends each turn at a step every rank pauses at.
    proc, session = tuimon(str(RECIPES / "tiny_mlp.py"), "--headless", "--modes", "eager,default",
                           "--steps", "24", "--nproc", "2", "--device", "cpu", "--turn", "0.5",
                           timeout=420)
    assert proc.returncode == 0, proc.stderr
    evs, runs = runs_of(session)
    for kinds in runs.values():
        started = by_rank(kinds, "run_started")
        assert sorted(started) == [0, 1] and started[1][0]["backend"] == "gloo"
        assert all(len(s) == 24 for s in by_rank(kinds, "step").values())
        ats: dict[int, list[int]] = {}
        for rank, phases in by_rank(kinds, "phase").items():
            ats[rank] = [e["at"] for e in phases if e["phase"] == "paused"]
        caught = [e for e in kinds.get("control", []) if e.get("action") == "catch_up"]
        assert ats[0] == ats[1] or caught, ats
    compiled = runs["default-fp32"]
    assert sorted(by_rank(compiled, "compile")) == [0, 1]  # each rank compiles the DDP model
    summary = json.loads((session / "summary.json").read_text())
    rows = {r["run"]: r for r in summary["runs"]}
    compiled_row = rows["default-fp32"]
    assert compiled_row["compare"]["speedup"] and compiled_row["job"]["compile_divergence"] == []
    # Each rank trains on its own shard: 4 of tiny_mlp's 8 batches of 32; the job counts both.
    timing = rows["eager-fp32"]["timing"]
    assert timing["throughput"] == pytest.approx(64 / (timing["median_ms"] / 1000))
    losses = {r: [s["loss"] for s in runs[r]["step"] if s.get("rank") == 0] for r in runs}
    assert max(abs(a - b) for a, b in zip(*losses.values(), strict=True)) < 1e-3


def test_a_rank_that_raises_fails_the_job_with_its_cause(tuimon):
    proc, session = tuimon("run", "--headless", "--modes", "eager", "--steps", "40", "--", *TORCHRUN,
                           "--standalone", "--nproc-per-node", "2", DDP, "--raise-rank", "1",
                           "--raise-at", "5")
    assert proc.returncode == 1, proc.stderr
    assert "FAILED (step at ddp_train.py:" in proc.stdout and "rank 1: RuntimeError" in proc.stdout
    _, runs = runs_of(session)
    kinds = runs["eager-script"]
    failed = job_end(kinds, "failed")
    assert failed["failed_rank"] == 1 and failed["error"] == "RuntimeError"
    assert failed["what"] == "rank 1: RuntimeError: bad batch on rank 1 at step 5"
    assert failed["where"].startswith("ddp_train.py:") and "rank 0" in failed["ranks_fate"]
    assert len(by_rank(kinds, "step")[1]) == 5  # what it measured before it raised is kept
    md = (session / "summary.md").read_text()
    assert "| status | failed: rank 1: RuntimeError: bad batch on rank 1 at step 5 |" in md
    assert "rank 1 failed after 5 steps" in md


def test_ctrl_c_stops_every_rank_at_the_same_step_and_leaves_no_process(tmp_path):
    out = tmp_path / "sessions"
    cmd = [PY, "-m", "tuimon", "run", "--headless", "--modes", "eager", "--repeats", "1",
           "--out", str(out), "--",
           *TORCHRUN, "--standalone", "--nproc-per-node", "2", DDP, "--epochs", "1000"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            cwd=tmp_path, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    seen: dict[int, float] = {}
    try:
        deadline = time.monotonic() + 120
        while True:
            assert time.monotonic() < deadline and proc.poll() is None, "never got ready"
            descendants(proc.pid, seen)
            found = sorted(out.glob("*/events.jsonl")) if out.exists() else []
            if found:
                evs = store.read_events(found[0].parent)[0]
                ranks = {e["rank"] for e in evs if e["type"] == "step" and e["i"] >= 10}
                if ranks == {0, 1}:
                    break
            time.sleep(0.1)
        proc.send_signal(signal.SIGINT)
        stdout, _ = proc.communicate(timeout=90)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, stdout
    assert not survivors(seen)
    session = found[0].parent
    _, runs = runs_of(session)
    kinds = runs["eager-script"]
    last = {r: s[-1]["i"] for r, s in by_rank(kinds, "step").items()}
    assert last[0] == last[1], last  # both stopped at the same step: neither left in a collective
    assert {e[0]["reason"] for e in by_rank(kinds, "finished").values()} == {"stopped"}
    assert job_end(kinds, "finished")["reason"] == "stopped"
    assert "interrupted at step" in (session / "logs" / "eager-script.log").read_text()
    assert store.read_meta(session)["status"] == "interrupted"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def two_nodes(tmp_path: Path, *script_args: str, timeout: float = 240,
              env: dict | None = None) -> tuple[list, list]:
    """Two tuimon sessions, one per node of a two-node torchrun job on loopback; both waited
    for, and on a timeout both killed and everything they printed shown."""
    port = str(free_port())
    procs = []
    for node in (0, 1):
        cmd = [PY, "-m", "tuimon", "run", "--headless", "--modes", "eager", "--steps", "20", "--repeats", "1",
               "--out", str(tmp_path / f"node{node}"), "--", *TORCHRUN, "--nnodes", "2",
               "--node-rank", str(node), "--nproc-per-node", "1", "--master-addr", "127.0.0.1",
               "--master-port", port, DDP, *script_args]
        procs.append(subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                      text=True, cwd=tmp_path, env={**os.environ, **(env or {})}))
    deadline = time.monotonic() + timeout
    try:
        outs = [p.communicate(timeout=max(1.0, deadline - time.monotonic())) for p in procs]
    except subprocess.TimeoutExpired:
        for p in procs:
            p.kill()
        said = [p.communicate() for p in procs]
        logs = [log.read_text()[-3000:] for log in sorted(tmp_path.glob("node*/*/logs/*.log"))]
        pytest.fail(f"a node's session did not end in {timeout:.0f} s: {said} {logs}")
    return procs, outs


def test_a_two_node_job_on_loopback_is_read_as_one_job(tmp_path, inductor_cache):
    procs, outs = two_nodes(tmp_path, "--slow-rank", "1", "--slow-ms", "0.6")
    for p, (_, stderr) in zip(procs, outs, strict=True):
        assert p.returncode == 0, stderr
        assert "one after the other (--schedule sequential)" in stderr
    nodes = [next((tmp_path / f"node{k}").glob("*")) for k in (0, 1)]
    for k, node in enumerate(nodes):  # each node's session holds its own rank
        assert {e["rank"] for e in store.read_events(node)[0] if e.get("rank") is not None} == {k}
    proc = subprocess.run([PY, "-m", "tuimon", "summary", "--format", "json", *map(str, nodes)],
                          capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    (row,) = json.loads(proc.stdout)["runs"]
    assert row["job"]["world_size"] == 2 and [x["rank"] for x in row["job"]["ranks"]] == [0, 1]
    assert row["timing"]["steps"] == 20 and row["job"]["stragglers"][0]["rank"] == 1
    assert (nodes[0] / "job-summary.md").is_file() and (nodes[0] / "job-steps.csv").is_file()
    md = (nodes[0] / "job-summary.md").read_text()
    assert "(2 nodes)" in md and "| ranks (world size) | 2 ranks · gloo" in md
    assert json.loads((nodes[0] / "summary.json").read_text())["runs"][0]["job"]["world_size"] == 2


def test_a_rank_that_dies_at_its_exit_is_said_and_no_node_waits_for_it(tmp_path, inductor_cache):
    """Node 1's rank aborts as its interpreter tears down, after its steps (gloo's destructor
    did, now and then, while tuimon's hooks kept the DDP model alive): node 1 says so, its steps
    all kept; node 0's torchrun would wait 300 s at its exit barrier for node 1's launcher, which
    never comes: tuimon ends that wait and says why."""
    started = time.monotonic()
    procs, outs = two_nodes(tmp_path, "--abort-at-exit-rank", "1", env={EXIT_WAIT_ENV: "4"})
    assert time.monotonic() - started < 4 + 60  # not torch's 300 s
    for p, (_, stderr) in zip(procs, outs, strict=True):
        assert p.returncode == 0, stderr
    nodes = [next((tmp_path / f"node{k}").glob("*")) for k in (0, 1)]
    for node in nodes:
        assert json.loads((node / "summary.json").read_text())["runs"][0]["timing"]["steps"] == 20
    said = [[e["text"] for e in store.read_events(node)[0] if e["type"] == "warning"] for node in nodes]
    assert any("rank 1 was killed by SIGABRT as its process exited, after it had finished" in t
               for t in said[1]), said[1]
    assert any("torchrun still waited for the other nodes' launchers at its exit barrier" in t
               and "tuimon ended it" in t for t in said[0]), said[0]
    assert "rank 1 was killed by SIGABRT" in outs[1][0]  # told in the headless output too


def test_a_bad_exit_is_read_from_torchruns_report():
    report = """torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
Root Cause (first observed failure):
[0]:
  time      : 2026-11-24_18:19:42
  host      : localhost
  rank      : 1 (local_rank: 0)
  exitcode  : -6 (pid: 21357)  (SIGABRT)
"""
    assert _bad_exit(report).startswith("rank 1 was killed by SIGABRT as its process exited")
    assert _bad_exit(report.replace("-6 (pid", "3 (pid")).startswith("rank 1 exited with code 3")
    assert _bad_exit(report.replace("-6 (pid", "-2 (pid")) is None  # tuimon's own SIGINT: a stop
    assert _bad_exit("no report") is None
    # A rank tuimon stopped at --steps whose script let the KeyboardInterrupt through exits 1:
    # tuimon's excepthook handled it (Python exits by SIGINT only when its own hook does)
    exit_1 = report.replace("-6 (pid", "1 (pid")
    stopped = {1: SimpleNamespace(said=RankState(1, end={"reason": "steps"}))}
    assert _bad_exit(exit_1, stopped) is None
    # ... or by tuimon's stop line, as a job's ranks are stopped at one step (seen once in a full
    # suite's run of tests/e2e/test_accelerate_runs.py under load)
    by_line = {1: SimpleNamespace(said=RankState(1, end={"reason": "stopped"}))}
    assert _bad_exit(exit_1, by_line) is None
    ended = {1: SimpleNamespace(said=RankState(1, end={"reason": "script ended"}))}
    assert _bad_exit(exit_1, ended).startswith("rank 1 exited with code 1")


def cuda_gpus() -> int:
    try:
        import torch
    except ImportError:
        return 0
    return torch.cuda.device_count() if torch.cuda.is_available() else 0


@pytest.mark.skipif(cuda_gpus() < 2, reason="needs two CUDA GPUs (nccl)")
def test_the_ddp_script_on_two_gpus_with_nccl(tuimon):
    proc, session = tuimon("run", "--headless", "--modes", "eager,default", "--steps", "60", "--",
                           *TORCHRUN, "--standalone", "--nproc-per-node", "2", DDP, timeout=600)
    assert proc.returncode == 0, proc.stderr
    _, runs = runs_of(session)
    for kinds in runs.values():
        started = by_rank(kinds, "run_started")
        assert {e[0]["backend"] for e in started.values()} == {"nccl"}
        assert {e[0]["device"] for e in started.values()} == {"cuda:0", "cuda:1"}
    summary = json.loads((session / "summary.json").read_text())
    for row in summary["runs"]:
        assert {tuple(x["gpus"]) for x in row["job"]["ranks"]} == {(0,), (1,)}  # each rank's GPU, by pid
    assert Path(session / "summary.md").read_text().count("nccl") >= 1
