"""tuimon under Slurm's srun, on this machine: two "nodes" (two tuimon processes, each with the
environment srun sets on its node, each running torchrun --nnodes 2 --node-rank K on loopback
gloo) write their sessions into the job's directory, read as one job from there; and, where
Debian's slurm-wlm is installed and its daemons start here (root, munge), the real srun on a
cluster of two slurmd on this machine: the same job, and two tasks on one node refused in one
line each."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_ranks import DDP, TORCHRUN, free_port

from tuimon.sessiondir import store

PY = sys.executable
TUIMON_RUN = [PY, "-m", "tuimon", "run", "--headless", "--modes", "eager", "--steps", "20",
              "--repeats", "1"]


def srun_env(node: int, job: str) -> dict[str, str]:
    """What srun --nodes 2 --ntasks-per-node 1 sets in node ``node``'s task (srun(1))."""
    return {"SLURM_JOB_ID": job, "SLURM_JOBID": job, "SLURM_STEP_ID": "0", "SLURM_STEPID": "0",
            "SLURM_NODEID": str(node), "SLURM_PROCID": str(node), "SLURM_LOCALID": "0",
            "SLURM_NNODES": "2", "SLURM_NTASKS": "2", "SLURM_STEP_NUM_NODES": "2",
            "SLURM_STEP_NUM_TASKS": "2", "SLURM_STEP_TASKS_PER_NODE": "1(x2)",
            "SLURM_TASKS_PER_NODE": "1(x2)", "SLURM_JOB_NODELIST": "node[0-1]",
            "SLURM_STEP_NODELIST": "node[0-1]", "SLURMD_NODENAME": f"node{node}"}


def test_two_srun_nodes_on_loopback_are_read_as_one_job_from_the_job_s_directory(tmp_path):
    port, out, job = str(free_port()), tmp_path / "sessions", "4242"
    procs = []
    for node in (0, 1):
        cmd = [*TUIMON_RUN, "--out", str(out), "--", *TORCHRUN, "--nnodes", "2", "--node-rank",
               str(node), "--nproc-per-node", "1", "--master-addr", "127.0.0.1", "--master-port",
               port, DDP]
        procs.append(subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                      cwd=tmp_path, env={**os.environ, **srun_env(node, job)}))
    try:
        outs = [p.communicate(timeout=240) for p in procs]
    except subprocess.TimeoutExpired:
        for p in procs:
            p.kill()
        pytest.fail(f"a node's session did not end in 240 s: {[p.communicate() for p in procs]}")
    step = out / f"slurm-{job}-0"
    for node, (p, (_, stderr)) in enumerate(zip(procs, outs, strict=True)):
        assert p.returncode == 0, stderr
        assert "one after the other (--schedule sequential)" in stderr  # as a torchrun --nnodes job
        assert (f"Slurm job {job} step 0, node {node} of 2 (node{node}): this node's session is "
                f"{step / f'node{node}'}; read the whole job with 'tuimon summary {step}'") in stderr
        assert {e["rank"] for e in store.read_events(step / f"node{node}")[0]
                if e.get("rank") is not None} == {node}
    proc = subprocess.run([PY, "-m", "tuimon", "summary", "--format", "json", str(step)],
                          capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    (row,) = json.loads(proc.stdout)["runs"]
    assert row["job"]["world_size"] == 2 and [x["rank"] for x in row["job"]["ranks"]] == [0, 1]
    assert row["timing"]["steps"] == 20, row["timing"]  # (the straggler: test_ranks.py's to judge)
    md = (step / "job-summary.md").read_text()  # the job's files in the job's directory
    assert f"# tuimon session slurm-{job}-0 (2 nodes)" in md and "| ranks (world size) | 2 ranks" in md, md
    assert (step / "job-steps.csv").is_file() and (step / "job-summary.json").is_file()
    report = subprocess.run([PY, "-m", "tuimon", "report", str(step)], capture_output=True,
                            text=True, cwd=tmp_path)
    assert report.returncode == 0 and (step / "report.html").is_file(), report.stderr
    from tuimon.cli.replay import job_source  # replay's and attach's reading of it

    source, note = job_source([str(step)], "replay")
    assert note.startswith("one torchrun job over 2 nodes' sessions")
    assert [Path(p) for p in source.paths] == [step / "node0", step / "node1"]
    listed = subprocess.run([PY, "-m", "tuimon", "ls", "--out", str(out)], capture_output=True,
                            text=True, cwd=tmp_path).stdout
    assert f"slurm-{job}-0/node0" in listed and f"slurm-{job}-0/node1" in listed, listed
    (step / "node1").rename(tmp_path / "node1-elsewhere")  # a node not copied here (yet)
    proc = subprocess.run([PY, "-m", "tuimon", "summary", str(step)], capture_output=True,
                          text=True, cwd=tmp_path)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert "1 of 2 nodes has no session yet (node1: not started yet, or not copied here)" in proc.stderr, \
        proc.stderr


@pytest.mark.parametrize(("shape", "said"), [
    ({"SLURM_NODEID": "1", "SLURMD_NODENAME": "node1"},  # the batch script's $SLURM_NODEID
     "torchrun --node-rank 0 on node1, Slurm node 1 of 2: every node would claim the same rank"),
    ({"SLURM_STEP_TASKS_PER_NODE": "2(x2)", "SLURM_NTASKS": "4", "SLURM_STEP_NUM_TASKS": "4"},
     "srun started 2 tuimon tasks on node0: they would race each other's variants on one node"),
])
def test_an_srun_shape_that_would_collide_or_hang_is_one_line_and_exit_2(tmp_path, shape, said):
    cmd = [*TUIMON_RUN, "--out", str(tmp_path / "sessions"), "--", *TORCHRUN, "--nnodes", "2",
           "--node-rank", "0", "--nproc-per-node", "1", "--master-addr", "127.0.0.1", DDP]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path,
                          env={**os.environ, **srun_env(0, "77"), **shape})
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert proc.stderr.startswith(f"tuimon: error: {said}") and "srun" in proc.stderr
    assert not (tmp_path / "sessions").exists()  # nothing launched, nothing written


# ---- the real srun --------------------------------------------------------------------------
SLURM_CONF = """\
ClusterName=tuimontest
SlurmctldHost={host}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket={d}/munge.socket
SlurmctldPort={ctld_port}
StateSaveLocation={d}/state
SlurmdSpoolDir={d}/spool-%n
SlurmctldPidFile={d}/slurmctld.pid
SlurmdPidFile={d}/slurmd-%n.pid
SlurmctldLogFile={d}/slurmctld.log
SlurmdLogFile={d}/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MpiDefault=none
MailProg=/bin/true
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
NodeName=node1 NodeHostname={host} NodeAddr=127.0.0.1 Port={port1} CPUs=1
NodeName=node2 NodeHostname={host} NodeAddr=127.0.0.1 Port={port2} CPUs=1
PartitionName=debug Nodes=node[1-2] Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
"""
NODES = ("node1", "node2")  # two slurmd of this machine, each a node of the cluster (-N NAME)


@pytest.fixture(scope="module")
def slurm_cluster(tmp_path_factory):
    """A two-node Slurm cluster on this machine (slurmctld, two slurmd and munged of its own,
    in a temporary directory, on free ports): the environment srun needs to reach it. Skips,
    saying why, where slurm-wlm is not installed or its daemons do not start here."""
    for tool in ("srun", "sinfo", "squeue", "slurmctld", "slurmd", "munged"):
        if shutil.which(tool) is None and not Path(f"/usr/sbin/{tool}").exists():
            pytest.skip(f"{tool} is not installed (Debian: apt-get install slurm-wlm)")
    if os.geteuid() != 0:
        pytest.skip("starting slurmctld and slurmd here needs root")
    d = tmp_path_factory.mktemp("slurm")
    for sub in ("state", *(f"spool-{n}" for n in NODES)):
        (d / sub).mkdir()
    conf = d / "slurm.conf"
    conf.write_text(SLURM_CONF.format(host=socket.gethostname(), d=d, ctld_port=free_port(),
                                      port1=free_port(), port2=free_port()))
    env = {**os.environ, "SLURM_CONF": str(conf)}
    sbin = lambda tool: shutil.which(tool) or f"/usr/sbin/{tool}"  # noqa: E731
    started = [subprocess.run([sbin("munged"), "--force", f"--socket={d}/munge.socket",
                               f"--pid-file={d}/munged.pid", f"--log-file={d}/munged.log",
                               f"--seed-file={d}/munged.seed"], capture_output=True, text=True),
               subprocess.run([sbin("slurmctld"), "-f", str(conf), "-i"], capture_output=True,
                              text=True, env=env)]
    started += [subprocess.run([sbin("slurmd"), "-f", str(conf), "-N", node], capture_output=True,
                               text=True, env=env) for node in NODES]
    try:
        if not until(lambda: subprocess.run(["sinfo", "-h", "-o", "%t"], capture_output=True, text=True,
                                            env=env).stdout.split() == ["idle"], 30):
            logs = {p.name: p.read_text()[-600:] for p in d.glob("*.log")}
            pytest.skip(f"Slurm's daemons did not start here: {[s.stderr[-300:] for s in started]} {logs}")
        yield env
        until(lambda: not subprocess.run(["squeue", "-h"], capture_output=True, text=True,
                                         env=env).stdout.strip(), 20)  # the last job step's end
    finally:
        stop_daemons(d)


def until(done, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while not done():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)
    return True


def stop_daemons(d: Path) -> None:
    """Ours alone, by the pid each wrote as it started: slurmd first (its steps report to
    slurmctld), munged last (both sign with it); SIGKILL for one still there after 10 s."""
    for name in (*(f"slurmd-{n}" for n in NODES), "slurmctld", "munged"):
        pid = d / f"{name}.pid"
        if not (pid.is_file() and pid.read_text().strip().isdigit()):
            continue
        pid = int(pid.read_text())

        def gone(pid=pid) -> bool:
            try:
                os.kill(pid, 0)
                return Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z"
            except (ProcessLookupError, FileNotFoundError):
                return True
        try:
            os.kill(pid, signal.SIGTERM)
            if not until(gone, 10):
                os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def test_under_the_real_srun_two_nodes_write_one_job_s_directory_read_as_one_job(slurm_cluster,
                                                                                    tmp_path):
    out = tmp_path / "sessions"
    run = " ".join([*TUIMON_RUN, "--out", str(out), "--", *TORCHRUN, "--nnodes", "$SLURM_NNODES",
                    "--node-rank", "$SLURM_NODEID", "--nproc-per-node", "1", "--master-addr",
                    "127.0.0.1", "--master-port", str(free_port()), DDP])
    proc = subprocess.run(["srun", "-N2", "--ntasks-per-node", "1", "bash", "-c", run],
                          capture_output=True, text=True, cwd=tmp_path, env=slurm_cluster, timeout=240)
    assert proc.returncode == 0, proc.stderr
    (step,) = out.glob("slurm-*-0")
    assert sorted(p.name for p in step.iterdir()) == list(NODES)
    slurm = [store.read_meta(step / node)["slurm"] for node in NODES]
    assert [(s["node_id"], s["nodes"], s["node_list"]) for s in slurm] == \
        [(0, 2, list(NODES)), (1, 2, list(NODES))]
    assert proc.stderr.count(f"read the whole job with 'tuimon summary {step}'") == 2
    summary = subprocess.run([PY, "-m", "tuimon", "summary", "--format", "json", str(step)],
                             capture_output=True, text=True, cwd=tmp_path)
    assert summary.returncode == 0, summary.stderr
    (row,) = json.loads(summary.stdout)["runs"]
    assert row["job"]["world_size"] == 2 and [x["rank"] for x in row["job"]["ranks"]] == [0, 1]
    assert row["timing"]["steps"] == 20
    # the batch script's $SLURM_NODEID (0) on every node: node 2 refuses in one line and
    # --kill-on-bad-exit ends node 1, whose torchrun would wait for it at the rendezvous
    words = run.replace("$SLURM_NODEID", "0").replace("$SLURM_NNODES", "2").split()
    started = time.monotonic()
    proc = subprocess.run(["srun", "-N2", "--ntasks-per-node", "1", "--kill-on-bad-exit=1", *words],
                          capture_output=True, text=True, cwd=tmp_path, env=slurm_cluster, timeout=120)
    assert proc.returncode != 0 and time.monotonic() - started < 60, proc.stderr
    assert "tuimon: error: torchrun --node-rank 0 on node2, Slurm node 1 of 2" in proc.stderr
    # two tuimon tasks on one node: each refuses in one line, srun's exit is theirs
    proc = subprocess.run(["srun", "-N1", "-n2", "--overcommit", *run.replace("$SLURM_NNODES", "1").split()],
                          capture_output=True, text=True, cwd=tmp_path, env=slurm_cluster, timeout=120)
    assert proc.returncode == 2, proc.stderr
    refused = [line for line in proc.stderr.splitlines() if line.startswith("tuimon: error:")]
    assert len(refused) == 2 and all("srun started 2 tuimon tasks on node" in line for line in refused)
