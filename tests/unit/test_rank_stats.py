"""Torchrun jobs without torchrun: the command check, ports, the rank statistics (join, own
time, skew, stragglers, compile divergence), the supervisor's per-job state machine and the
merging of several nodes' sessions, on synthetic events with answers known by construction."""

from __future__ import annotations

import json
import os
import random
import sys
import time

import pytest

from tuimon import events
from tuimon.analysis import load_session
from tuimon.analysis.stats import summarize
from tuimon.analysis.stats.stragglers import divergence, own_times
from tuimon.cli.args import UsageError
from tuimon.cli.jobs import check_jobs
from tuimon.cli.run_flags import run_parser
from tuimon.cli.script import check_command
from tuimon.control.job_child import JobChild
from tuimon.report import export
from tuimon.report.rank_text import divergence_line, rank_names
from tuimon.sessiondir import merge
from tuimon.sessiondir.run_state import SessionState
from tuimon.settings import Program
from tuimon.torchrun import TorchrunError, is_torchrun, parse


# ---- synthetic jobs ------------------------------------------------------------------------
def job_events(run="eager-script", mode="eager", world=2, steps=120, slow_rank=None, slow_ms=4.0,
               slow_from=0, pre=2.0, rest=8.0, ranks=None, job_id="job-1", t0=1000.0, seed=0,
               node=0, compile_at=None, tail=0.0):
    """A DDP-like job: every rank's step ends together (the all-reduce waits for the last rank
    to reach backward), so only pre_ms tells the ranks apart. ``compile_at``: {rank: [steps]};
    ``tail``: the mean of an exponential delay added to every rank's pre_ms (a busy machine)."""
    rng = random.Random(seed)
    ranks = list(range(world)) if ranks is None else ranks
    out = [events.make(events.RUN_QUEUED, run, mode=mode, precision="script")]
    for r in ranks:
        out.append(events.make(events.RUN_STARTED, run, mode=mode, precision="script", device="cpu",
                               device_name="cpu", rank=r, local_rank=r % 2, world_size=world,
                               node_rank=node, host=f"node{node}", backend="gloo", job_id=job_id,
                               pid=100 + r))
    for i in range(steps):
        pres = {r: pre + rng.uniform(0, 0.2) + (rng.expovariate(1 / tail) if tail else 0.0)
                + (slow_ms if r == slow_rank and i >= slow_from else 0) for r in ranks}
        ms = max(pres.values()) + rest
        for r in ranks:
            step = {"i": i, "t": t0 + i * 0.02, "ms": round(ms + rng.uniform(0, 0.1), 4),
                    "data_ms": 0.0, "n": 32, "loss": 1.0 / (i + 1) + r * 0.01,
                    "phase": "warmup" if i == 0 else "steady", "pre_ms": round(pres[r], 4),
                    "rank": r}
            if compile_at and i in compile_at.get(r, ()):
                step["compile_ms"] = 50.0
            out.append(events.make(events.STEP, run, **step))
    for r in ranks:
        out.append(events.make(events.FINISHED, run, reason="steps", seconds=3.0, rank=r))
    out.append(events.make(events.FINISHED, run, reason="steps", ranks=len(ranks)))
    return out


def job_row(evs):
    (row,) = summarize(evs).runs
    return row


# ---- the command -----------------------------------------------------------------------------
def fake_torchrun(tmp_path):
    exe = tmp_path / "torchrun"
    exe.write_text(f"#!{sys.executable}\nfrom torch.distributed.run import main\nmain()\n")
    exe.chmod(0o755)
    (tmp_path / "train.py").write_text("print('hi')\n")
    return exe


def test_torchrun_commands_are_found_with_their_script(tmp_path, monkeypatch):
    exe = fake_torchrun(tmp_path)
    monkeypatch.chdir(tmp_path)
    found = check_command([str(exe), "--nproc-per-node=4", "--standalone", "train.py", "--bs", "8"])
    assert found["launcher"] == "torchrun" and found["nproc"] == 4 and found["nnodes"] == 1
    assert found["name"] == "train" and found["script"] == str(tmp_path / "train.py")
    found = check_command([sys.executable, "-m", "torch.distributed.run", "--nnodes", "2",
                           "--nproc_per_node", "2", "-m", "pkg.train"])
    assert found["launcher"] == "torchrun" and found["nnodes"] == 2 and found["name"] == "train"
    assert found["script"] is None
    for bad, why in (([str(exe), "--nproc-per-node", "2"], "without a training script"),
                     ([str(exe), "missing.py"], "script not found: missing.py"),
                     ([str(exe), "--run-path", "train.py"], "--run-path")):
        with pytest.raises(UsageError, match=why):
            check_command(bad)


@pytest.mark.parametrize("words, offset, expected", [
    (["--standalone", "--nproc-per-node", "2"], 3, None),  # a free port of its own
    (["--nproc-per-node", "2"], 3, None),  # single node: torchrun picks a free port
    (["--master-port", "29600"], 2, ["--master-port", "29602"]),
    (["--master_port=29600"], 1, ["--master_port=29601"]),
    (["--rdzv-endpoint", "node0:29400", "--nnodes", "2"], 1, ["--rdzv-endpoint", "node0:29401"]),
    (["--rdzv-endpoint=node0", "--nnodes", "2"], 2, ["--rdzv-endpoint=node0:29402"]),
    (["--nnodes", "2", "--node-rank", "1", "--master-addr", "10.0.0.1"], 1,
     ["--master-port", "29501"]),  # a multi-node static rendezvous on torchrun's default port
    (["--master-port", "29600"], 0, []),
])
def test_each_variant_gets_its_own_rendezvous_port(words, offset, expected):
    cmd = ["torchrun", *words, "train.py", "--master-port", "7"]  # the script's own flag: untouched
    job = parse(cmd, is_torchrun(cmd, False))
    moved = job.with_port_offset(offset)
    if expected is None or expected == []:
        assert moved == cmd
        return
    assert moved[-3:] == ["train.py", "--master-port", "7"]
    joined = " ".join(moved)
    assert " ".join(expected) in joined
    assert "each variant's job gets its own port" in job.port_text(offset)


def test_torchrun_parse_errors_are_one_line():
    with pytest.raises(TorchrunError, match="needs a value"):
        parse(["torchrun", "--nnodes"], 1)


def args_of(*argv):
    return run_parser().parse_args(list(argv))


def test_a_multi_node_job_runs_its_variants_in_step_or_one_after_the_other():
    job = Program(command=("torchrun", "--nnodes", "2", "train.py"), launcher="torchrun", nnodes=2)
    args = args_of()
    assert check_jobs(args, [], job) and args.schedule == "sequential"  # said in a note
    args = args_of("--turn-steps", "50")
    assert check_jobs(args, [], job) == [] and args.schedule == "interleave"
    with pytest.raises(UsageError, match="needs --turn-steps"):
        check_jobs(args_of("--schedule", "interleave"), ["--schedule", "interleave"], job)
    with pytest.raises(UsageError, match="use --steps"):
        check_jobs(args_of("--duration", "60"), [], job)
    with pytest.raises(UsageError, match="--nproc is a recipe's option"):
        check_jobs(args_of("--nproc", "2"), [], Program(command=("python", "train.py")))
    with pytest.raises(UsageError, match="--device cuda:N and --nproc"):
        check_jobs(args_of("--nproc", "2", "--device", "cuda:1"), [], None)
    one_node = Program(command=("torchrun", "train.py"), launcher="torchrun", nnodes=1)
    assert check_jobs(args_of("--duration", "60"), [], one_node) == []


# ---- statistics ----------------------------------------------------------------------------
def test_own_time_takes_the_wait_for_the_last_rank_out():
    steps = {0: {"ms": 14.0, "pre_ms": 1.0}, 1: {"ms": 14.0, "pre_ms": 11.0}}
    assert own_times(steps) == {0: 4.0, 1: 14.0}  # rank 0 waited 10 ms for rank 1
    free = {0: {"ms": 4.0, "pre_ms": 1.0}, 1: {"ms": 14.0, "pre_ms": 11.0}}  # no collective
    assert own_times(free) == {0: 4.0, 1: 14.0}
    assert own_times({0: {"ms": 5.0}, 1: {"ms": 6.0, "pre_ms": 1.0}}) == {0: 5.0, 1: 6.0}


def test_a_job_step_is_its_slowest_ranks_and_every_rank_has_a_row():
    row = job_row(job_events(world=4, slow_rank=2, slow_ms=4.0, slow_from=60, seed=1))
    assert row.job.world_size == 4 and row.job.backend == "gloo" and row.timing.steps == 120
    assert [x["rank"] for x in row.job.ranks] == [0, 1, 2, 3]
    assert all(x["steps"] == 120 and x["status"] == "done" for x in row.job.ranks)
    assert row.status == "done"  # the job's own status: its ranks ran (it read "not run")
    # every rank's batch
    assert row.timing.throughput == pytest.approx(4 * 32 / (row.timing.median_ms / 1000))
    (s,) = row.job.stragglers
    assert s["rank"] == 2 and 30 <= s["slower_pct"] <= 50  # ~4 ms over ~10 ms of own time
    assert 55 <= s["since"] <= 66, s
    own = {x["rank"]: x["own_ms"] for x in row.job.ranks}
    assert own[2] > own[0] + 2 and row.job.skew_pct > 20
    md = export.to_markdown({}, summarize(job_events(world=4, slow_rank=2, slow_from=60, seed=1)))
    assert "| straggler | rank 2: " in md and "since step" in md
    assert "| ranks (world size) | 4 ranks · gloo · 1 host |" in md


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_rank_slow_from_the_start_is_slow_since_the_first_steady_step(seed):
    """A busy machine's noise dips the slow rank's lead below the threshold now and then: that
    must not date it "since step 1747" (or hide it)."""
    row = job_row(job_events(steps=800, slow_rank=1, slow_ms=1.5, tail=3.0, seed=seed))
    (s,) = row.job.stragglers
    steady_from = row.timing.steady_from
    assert s["rank"] == 1 and s["since"] == steady_from and s["steps"] == 800 - steady_from, s
    late = job_row(job_events(steps=800, slow_rank=1, slow_ms=3.0, slow_from=300, tail=3.0, seed=seed))
    (s,) = late.job.stragglers
    assert 260 <= s["since"] <= 340, s  # a noisy change is dated within a few dozen steps
    recovered = job_events(steps=800, slow_rank=1, slow_ms=3.0, tail=3.0, seed=seed)
    for e in recovered:  # slow over the first half only
        if e["type"] == events.STEP and e["i"] >= 400:
            e["pre_ms"] = round(e["pre_ms"] - (3.0 if e["rank"] == 1 else 0.0), 4)
    assert job_row(recovered).job.stragglers == []


def test_noise_alone_names_no_straggler():
    row = job_row(job_events(world=8, seed=3))
    assert row.job.stragglers == [] and row.job.skew_pct < 5
    assert "| straggler | none |" in export.to_markdown({}, summarize(job_events(world=8, seed=3)))


def test_steps_held_by_a_catch_up_are_kept_apart():
    evs = job_events(steps=60)
    # Said before the held steps end: the ranks that waited finish them after the catch-up.
    evs.insert(20, events.make(events.CONTROL, "eager-script", action="catch_up", first=10, last=12))
    row = job_row(evs)
    assert row.timing.measured == 57  # step 0 (warm-up) and steps 10, 11 out


def test_compiles_that_differ_between_ranks_are_named():
    row = job_row(job_events(compile_at={0: [0], 1: [0, 70]}))
    assert [divergence_line(d) for d in row.job.compile_divergence] == ["step 70 compiled on rank 1 only"]
    assert "compiles diverge across ranks: step 70" in export.to_markdown({}, summarize(
        job_events(compile_at={0: [0], 1: [0, 70]})))
    # A rank still behind the step where another compiled is no divergence (yet).
    assert divergence({0: {"graphs": 1, "breaks": 0, "recompiles": 0, "compile_steps": {5}, "reasons": []},
                       1: {"graphs": 1, "breaks": 0, "recompiles": 0, "compile_steps": set(),
                           "reasons": []}}, {0: 9, 1: 4}) == []
    assert rank_names([0, 2, 3, 4, 7]) == "ranks 0, 2–4, 7"


def test_a_failed_rank_fails_the_job_and_the_others_fate_is_told():
    evs = job_events(steps=30)[:-3]  # no rank ended by itself
    evs += [events.make(events.FAILED, "eager-script", rank=1, stage="step", error="RuntimeError",
                        message="bad batch", what="RuntimeError: bad batch"),
            events.make(events.RUN_EXITED, "eager-script", rank=0, said=False),
            events.make(events.FAILED, "eager-script", stage="step", error="RuntimeError",
                        message="bad batch", what="rank 1: RuntimeError: bad batch", failed_rank=1,
                        ranks_fate="rank 0 ended by torchrun")]
    summary = summarize(evs)
    (row,) = summary.runs
    assert row.status == "failed" and row.failure.error == "rank 1: RuntimeError: bad batch"
    assert {x["rank"]: x["status"] for x in row.job.ranks} == {0: "killed", 1: "failed"}
    md = export.to_markdown({}, summary)
    assert "rank 1 failed after 30 steps: RuntimeError: bad batch" in md
    assert "rank 0 ended without a word" in md
    csv = export.to_csv(evs, summary).splitlines()
    head = csv[0].split(",")
    assert ",rank,pre_ms," in csv[0] and csv[1].split(",")[head.index("rank")] == "0"


# ---- the supervisor's side of a job ---------------------------------------------------------
class Conn:
    def __init__(self):
        self.lines = []

    def send(self, line):
        self.lines.append(line)
        return True


def job(world=2, **kw):
    state = SessionState()
    state.add(events.make(events.RUN_QUEUED, "r", mode="eager", precision="script"))
    child = JobChild("r", None, None, state=state.runs["r"], local_world=world,
                     **{"turn_steps": None, "turn_cap": None, "turns": False, **kw})
    child.said_to = state  # what the supervisor folds each recorded event into
    conns = {k: Conn() for k in range(world)}
    for k, c in conns.items():
        child.hello(k, c, {"pid": 10 + k, "local_world_size": world})
        said(child, k, {"type": "run_started"})
        said(child, k, {"type": "step", "i": 99, "t": time.time(), "ms": 10.0, "phase": "steady"})
    return child, conns


def said(child, rank, e):
    """A rank's event as the supervisor has it: recorded, folded into the run's state, then told."""
    e = {"t": time.time(), **e, "run": "r", "rank": rank}
    child.said_to.add(e)
    child.event(rank, e)


def paused(child, rank, at, turn=False):
    said(child, rank, {"type": "phase", "phase": "paused", "at": at, "turn": turn})


def test_a_pause_lands_on_the_same_step_of_every_rank_then_a_stop_there():
    child, conns = job()
    assert child.send("pause")
    target = child.target
    assert target > 100 and all(c.lines == [f"pause-at {target}"] for c in conns.values())
    paused(child, 0, target)
    assert child.check(time.monotonic()) == []  # rank 1 not there yet
    paused(child, 1, target)
    assert child.check(time.monotonic()) == [("settled", target, "pause")]
    child.send("stop")
    assert all(c.lines[-1] == f"stop-at {target} stopped" for c in conns.values())


def test_the_users_pause_over_a_turn():
    child, conns = job(turns=True)
    for k in conns:
        paused(child, k, 0, turn=True)
    child.check(time.monotonic())
    assert child.send("pause") and child.intent == "pause"  # waiting for its turn: held there
    assert child.send("resume") and child.intent == "turn"  # back in the rotation, not stepping
    assert all(c.lines == [] for c in conns.values())
    child.send("resume")  # its turn comes
    for k in conns:
        said(child, k, {"type": "phase", "phase": "steady"})
    child.schedule("turn")  # the turn's end is under way ...
    target = child.target
    assert child.send("pause") and child.intent == "pause"  # ... and becomes the user's pause
    assert conns[0].lines[-1] == f"pause-at {target}"
    for k in conns:
        paused(child, k, target)
    assert child.check(time.monotonic()) == [("settled", target, "pause")]


def test_a_pause_called_off_before_it_landed():
    child, conns = job()
    child.send("pause")
    paused(child, 0, child.target)
    assert child.send("resume") and child.intent is None
    assert all(c.lines[-1] == "resume" for c in conns.values())
    said(child, 0, {"type": "phase", "phase": "steady"})
    assert child.check(time.monotonic() + 5) == []  # nothing pending: no catch-up


def test_ranks_that_paused_apart_catch_up_to_the_furthest():
    child, conns = job()
    child.schedule("turn")
    paused(child, 0, 120, turn=True)
    paused(child, 1, 123, turn=True)
    assert child.check(time.monotonic()) == [("catch_up", 120, 123)]
    assert conns[0].lines[-2:] == ["pause-at 123 turn", "resume"] and len(conns[1].lines) == 1
    paused(child, 0, 123, turn=True)
    assert child.check(time.monotonic()) == [("settled", 123, "turn")]


def test_ranks_left_waiting_in_a_collective_are_caught_up_by_one_step():
    child, conns = job()
    child.schedule("pause")
    paused(child, 0, child.target)
    assert child.check(time.monotonic()) == []
    assert child.check(time.monotonic() + 5) == [("catch_up", child.target - 1, child.target)]
    assert conns[0].lines[-1] == "resume" and conns[1].lines[-1].startswith("pause-at")


def test_a_turn_sized_in_steps_ends_at_the_same_step_on_every_node():
    child, conns = job(turn_steps=500, turns=True)
    for k in conns:
        paused(child, k, 0, turn=True)  # every rank waits for its first turn at step 0
    assert child.check(time.monotonic()) == [("settled", 0, "turn")]
    child.send("resume")
    assert all(c.lines == ["pause-at 500 turn", "resume"] for c in conns.values())
    for k in conns:
        said(child, k, {"type": "phase", "phase": "steady"})
    assert child.send("pause")  # the user's pause, within the turn
    assert child.check(time.monotonic()) == []
    for k in conns:
        paused(child, k, child.target)
    assert child.check(time.monotonic())[0][2] == "pause"
    child.send("resume")  # the turn's end again: the pause took its place in the ranks
    assert conns[0].lines[-2:] == ["pause-at 500 turn", "resume"]
    for k in conns:
        said(child, k, {"type": "phase", "phase": "steady"})
        paused(child, k, 500, turn=True)
    assert child.check(time.monotonic()) == [("settled", 500, "turn")]


# ---- several nodes' sessions -----------------------------------------------------------------
def node_dir(tmp_path, name, evs, meta=None):
    d = tmp_path / name
    d.mkdir()
    (d / "events.jsonl").write_text("".join(events.encode(e) for e in evs))
    (d / "meta.json").write_text(json.dumps(meta or {"name": name, "host": name, "status": "done"}))
    return d


def test_two_nodes_sessions_read_as_one_job(tmp_path):
    a = node_dir(tmp_path, "a", job_events(world=4, ranks=[0, 1], slow_rank=3, node=0))
    b = node_dir(tmp_path, "b", job_events(world=4, ranks=[2, 3], slow_rank=3, node=1, t0=1000.001))
    meta, evs, summary = load_session([a, b])
    (row,) = summary.runs
    assert [x["rank"] for x in row.job.ranks] == [0, 1, 2, 3] and row.job.world_size == 4
    assert row.job.stragglers[0]["rank"] == 3 and row.job.hosts == ["node0", "node1"]
    assert [n["ranks"] for n in meta["nodes"]] == [[0, 1], [2, 3]] and "(2 nodes)" in meta["name"]
    assert row.timing.steps == 120  # one job step per step, from all four ranks
    c = node_dir(tmp_path, "c", job_events(world=4, ranks=[2, 3], job_id="another", node=1))
    with pytest.raises(merge.MergeError, match="not one job"):
        load_session([a, c])
    with pytest.raises(merge.MergeError, match="rank 0 of eager-script is in"):
        load_session([a, a])
    single = node_dir(tmp_path, "d", [events.make(events.RUN_QUEUED, "x", mode="eager", precision="fp32")])
    with pytest.raises(merge.MergeError, match="no ranks"):
        load_session([a, single])
    assert os.path.isdir(a)


# ---- each rank's GPU, from its pid (a fake NVML) ----------------------------------------------
AGENT = ("import subprocess, sys, time\n"
         "kids = [subprocess.Popen(['sleep', '30']) for _ in range(2)]\n"
         "print(' '.join(str(k.pid) for k in kids), flush=True)\n"
         "time.sleep(30)\n")


def test_each_ranks_gpu_is_found_from_its_pid(tmp_path):
    import subprocess

    from tests import fake_pynvml as fake
    from tuimon.control.sampler import Sampler
    from tuimon.probes import GpuProbe

    agent = subprocess.Popen([sys.executable, "-c", AGENT], stdout=subprocess.PIPE, text=True)
    p0 = p1 = None
    try:
        p0, p1 = (int(x) for x in agent.stdout.readline().split())
        now = int(time.time() * 1e6)
        devices = [fake.FakeDevice(procs=[(p0, 2**30)], util_samples=[(p0, now, 60, 10)]),
                   fake.FakeDevice(uuid="GPU-1", procs=[(p1, 2 * 2**30)],
                                   util_samples=[(p1, now, 90, 20)])]
        sampler = Sampler(0.2, lambda: {"eager-script": agent.pid}, lambda batch: None,
                          gpu=GpuProbe(fake.make(devices)),
                          ranks=lambda: {"eager-script": {0: p0, 1: p1}})
        sampler.tick()
        sample = next(e for e in sampler.tick() if e["type"] == "sample")
    finally:
        for pid in (p0, p1):
            if pid is not None:
                os.kill(pid, 9)
        agent.kill()
        agent.wait()
    job = sample["runs"]["eager-script"]
    assert job["gpus"] == [0, 1] and job["gpu_mem"] == 3 * 2**30 and job["descendants"] >= 2
    assert job["ranks"]["0"]["gpus"] == [0] and job["ranks"]["1"]["gpus"] == [1]
    assert job["ranks"]["1"]["gpu_mem"] == 2 * 2**30
    evs = job_events(steps=30)
    evs.insert(10, {**sample, "t": 1000.2})
    row = job_row(evs)
    assert [(x["gpus"], x["gpu_mem_max"]) for x in row.job.ranks] == [([0], 2**30), ([1], 2 * 2**30)]
