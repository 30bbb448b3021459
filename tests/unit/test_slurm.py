"""Slurm's srun (tuimon/slurm.py, cli/jobs.py, sessiondir/merge.py): the task read from the
environment srun sets, where a node's session goes, the shapes refused in one line, and a
job's directory read as one job (one line when a node has no session there yet)."""

from __future__ import annotations

import argparse
import json
import os

import pytest

from tuimon import slurm
from tuimon.cli.args import UsageError
from tuimon.cli.jobs import SEQUENTIAL_NOTE, check_jobs, several_nodes, srun_task
from tuimon.sessiondir import listing, merge, store
from tuimon.settings import Program

# As srun -N1 -n1 set it on Debian's slurm-wlm 22.05 here (env | grep SLURM, the task's part).
SRUN_ONE = {
    "SLURMD_NODENAME": "vm", "SLURM_CLUSTER_NAME": "tuimontest", "SLURM_CPUS_ON_NODE": "1",
    "SLURM_GTIDS": "0", "SLURM_JOBID": "1", "SLURM_JOB_ID": "1", "SLURM_JOB_NODELIST": "vm",
    "SLURM_JOB_NUM_NODES": "1", "SLURM_LOCALID": "0", "SLURM_NNODES": "1", "SLURM_NODEID": "0",
    "SLURM_NODELIST": "vm", "SLURM_NPROCS": "1", "SLURM_NTASKS": "1", "SLURM_PROCID": "0",
    "SLURM_STEPID": "0", "SLURM_STEP_ID": "0", "SLURM_STEP_NODELIST": "vm",
    "SLURM_STEP_NUM_NODES": "1", "SLURM_STEP_NUM_TASKS": "1", "SLURM_STEP_TASKS_PER_NODE": "1",
    "SLURM_TASKS_PER_NODE": "1",
}
# An sbatch script's own environment (no step: srun has not started it).
BATCH = {"SLURM_JOB_ID": "3", "SLURM_NNODES": "1", "SLURM_NODEID": "0", "SLURM_PROCID": "0",
         "SLURM_TASKS_PER_NODE": "1"}


def srun_env(node: int, nodes: int = 2, per_node: int = 1, job: str = "4242", step: str = "0",
             local: int = 0) -> dict[str, str]:
    """Task ``local`` of node ``node`` as srun --nodes NODES --ntasks-per-node PER_NODE sets it."""
    tasks = nodes * per_node
    return {"SLURM_JOB_ID": job, "SLURM_JOBID": job, "SLURM_STEP_ID": step, "SLURM_STEPID": step,
            "SLURM_NODEID": str(node), "SLURM_PROCID": str(node * per_node + local),
            "SLURM_LOCALID": str(local), "SLURM_NNODES": str(nodes), "SLURM_NTASKS": str(tasks),
            "SLURM_STEP_NUM_NODES": str(nodes), "SLURM_STEP_NUM_TASKS": str(tasks),
            "SLURM_STEP_TASKS_PER_NODE": f"{per_node}(x{nodes})",
            "SLURM_TASKS_PER_NODE": f"{per_node}(x{nodes})",
            "SLURM_JOB_NODELIST": f"gpu[01-{nodes:02d}]", "SLURM_STEP_NODELIST": f"gpu[01-{nodes:02d}]",
            "SLURMD_NODENAME": f"gpu{node + 1:02d}"}


def torchrun(*words: str) -> Program:
    nnodes = int(words[words.index("--nnodes") + 1].split(":")[-1]) if "--nnodes" in words else 1
    return Program(command=("torchrun", *words, "train.py"), script="/x/train.py", name="train",
                   launcher="torchrun", nproc=1, nnodes=nnodes)


STATIC = ("--nnodes", "2", "--nproc-per-node", "8", "--master-addr", "gpu01")


# ---- the environment ------------------------------------------------------------------------
def test_srun_s_own_environment_is_one_task_of_one_step():
    task = slurm.from_env(SRUN_ONE)
    assert (task.job_id, task.step_id, task.node_id, task.nodes, task.tasks, task.tasks_here) == \
        ("1", "0", 0, 1, 1, 1)
    assert task.place == "slurm-1-0/vm" and task.node_list == ("vm",)


def test_a_batch_script_or_no_slurm_at_all_is_no_srun_task():
    assert slurm.from_env(BATCH) is None and slurm.from_env({}) is None


def test_the_step_s_figures_come_before_the_job_s():
    env = {**srun_env(1, nodes=2), "SLURM_NNODES": "4", "SLURM_NTASKS": "4",
           "SLURM_TASKS_PER_NODE": "1(x4)", "SLURM_JOB_NODELIST": "gpu[01-04]"}
    task = slurm.from_env(env)
    assert (task.nodes, task.tasks, task.node_list, task.node_dir) == (2, 2, ("gpu01", "gpu02"), "gpu02")


def test_a_node_without_a_name_is_named_by_its_id_and_odd_names_are_made_safe():
    env = srun_env(1)
    del env["SLURMD_NODENAME"]
    assert slurm.from_env(env).node_dir == "node1"
    assert slurm.from_env({**env, "SLURMD_NODENAME": "../a/b"}).node_dir == "_a_b"


def test_tasks_per_node_and_host_lists_in_slurm_s_forms():
    assert [slurm.tasks_on_node("2(x3),1", k) for k in range(4)] == [2, 2, 2, 1]
    assert slurm.expand_hostlist("gpu[01-03,7],login") == ["gpu01", "gpu02", "gpu03", "gpu7", "login"]
    assert slurm.expand_hostlist("a[1-2]b[3-4]") == ["a1b3", "a1b4", "a2b3", "a2b4"]
    for bad in ("gpu[01-03", "gpu]1["):
        with pytest.raises(ValueError):
            slurm.expand_hostlist(bad)
    with pytest.raises(ValueError):
        slurm.tasks_on_node("2(x3),1", 4)


def test_a_value_srun_never_writes_is_one_line():
    with pytest.raises(slurm.SlurmError, match="SLURM_NODEID='x' is not a number"):
        slurm.from_env({**srun_env(0), "SLURM_NODEID": "x"})
    with pytest.raises(UsageError, match="tasks per node '2x'"):
        srun_task(torchrun(*STATIC), {**srun_env(0), "SLURM_STEP_TASKS_PER_NODE": "2x"})


# ---- the shapes -----------------------------------------------------------------------------
def test_one_tuimon_a_node_with_its_own_node_rank_is_the_supported_shape():
    for node in (0, 1):
        task = srun_task(torchrun(*STATIC, "--node-rank", str(node)), srun_env(node))
        assert task.node_id == node and task.place == f"slurm-4242-0/gpu0{node + 1}"


def test_several_tuimon_tasks_on_one_node_are_refused_naming_the_supported_command():
    with pytest.raises(UsageError, match="srun started 4 tuimon tasks on gpu01") as err:
        srun_task(torchrun(*STATIC, "--node-rank", "0"), srun_env(0, per_node=4, local=1))
    assert "srun --ntasks-per-node 1 --kill-on-bad-exit=1 bash -c 'tuimon run" in str(err.value)


def test_a_script_or_recipe_srun_starts_once_a_task_is_refused_in_one_line():
    script = Program(command=("python", "train.py"), script="/x/train.py", name="train")
    with pytest.raises(UsageError, match="train would run once a task, as 2 processes") as err:
        srun_task(script, srun_env(0))
    assert "init_process_group from SLURM_PROCID is not taken as ranks yet" in str(err.value)
    with pytest.raises(UsageError, match="each task would run the recipe as a session of its own"):
        srun_task(None, srun_env(1))
    assert srun_task(script, SRUN_ONE).tasks == 1  # one task: a session like any other


def test_a_torchrun_that_does_not_count_the_step_s_nodes_is_refused():
    with pytest.raises(UsageError, match="torchrun --nnodes 1 under srun on 2 nodes"):
        srun_task(torchrun("--nproc-per-node", "8"), srun_env(0))
    assert srun_task(torchrun("--nnodes", "1:4", "--rdzv-backend", "c10d"), srun_env(1)).nodes == 2
    # torchrun reads an option left out from its PET_* variable
    assert srun_task(torchrun("--nproc-per-node", "8"), {**srun_env(0), "PET_NNODES": "2"}).nodes == 2


def test_the_batch_script_s_node_rank_on_every_node_is_refused_with_the_quoting_that_fixes_it():
    """`srun tuimon run -- torchrun --node-rank $SLURM_NODEID` expands in the batch script: 0."""
    with pytest.raises(UsageError, match="torchrun --node-rank 0 on gpu02, Slurm node 1 of 2") as err:
        srun_task(torchrun(*STATIC, "--node-rank", "0"), srun_env(1))
    assert "bash -c 'tuimon run ... -- torchrun --node-rank $SLURM_NODEID ...'" in str(err.value)
    # a c10d rendezvous numbers the nodes itself
    assert srun_task(torchrun(*STATIC, "--rdzv-backend", "c10d"), srun_env(1)).node_id == 1


def jobs_args(**kw) -> argparse.Namespace:
    base = {"nproc": None, "device": "auto", "duration": None, "schedule": "interleave",
            "turn_steps": None}
    return argparse.Namespace(**{**base, **kw})


def environ(monkeypatch, env: dict[str, str]) -> None:
    """The process's environment: ``env`` for Slurm's and torchrun's variables."""
    for key in [k for k in os.environ if k.startswith(("SLURM", "PET_"))]:
        monkeypatch.delenv(key)
    for key, value in env.items():
        monkeypatch.setenv(key, value)


def test_a_step_over_several_nodes_is_treated_as_a_torchrun_nnodes_job_whatever_its_command(monkeypatch):
    """torchrun told its nodes by PET_NNODES alone: the command says one node, srun says two."""
    environ(monkeypatch, {**srun_env(1), "PET_NNODES": "2", "PET_NODE_RANK": "1"})
    script = torchrun("--nproc-per-node", "8")
    assert not several_nodes(script, None)
    args = jobs_args()
    assert check_jobs(args, [], script) == [SEQUENTIAL_NOTE]
    assert args.schedule == "sequential" and args.slurm.nodes == 2
    with pytest.raises(UsageError, match="--duration with a job over several nodes"):
        check_jobs(jobs_args(duration=60.0), [], script)


def test_outside_srun_nothing_changes(monkeypatch):
    environ(monkeypatch, BATCH)
    args = jobs_args()
    assert check_jobs(args, [], torchrun("--nproc-per-node", "2")) == [] and args.slurm is None


# ---- the job's directory -------------------------------------------------------------------
def node_session(root, node: int, nodes: int = 2, step: str = "0", name: str | None = None,
                 status: str = "done"):
    task = slurm.from_env(srun_env(node, nodes=nodes, step=step))
    s = store.SessionStore.create(root, "train", place=f"{task.job_dir}/{name or task.node_dir}")
    s.write_meta({"name": task.place, "status": status, "slurm": task.to_dict(),
                  "started": "2026-11-29T12:00:00+00:00"})
    s.append([{"type": "session_started", "t": 1.0}])
    s.close()
    return s.path


def test_each_node_s_session_goes_into_the_job_s_directory_a_name_taken_gets_a_suffix(tmp_path):
    first, again = node_session(tmp_path, 0), node_session(tmp_path, 0)
    assert first == tmp_path / "slurm-4242-0" / "gpu01" and again.name == "gpu01-1"
    assert json.loads((first / "meta.json").read_text())["slurm"]["node_list"] == ["gpu01", "gpu02"]


def test_the_job_s_directory_stands_for_its_nodes_sessions_in_node_order(tmp_path):
    b, a = node_session(tmp_path, 1), node_session(tmp_path, 0)
    step = tmp_path / "slurm-4242-0"
    assert merge.expand([step]) == ([a, b], step)  # the job's files go into it
    assert merge.expand([a, b]) == ([a, b], a)  # several sessions as before
    assert merge.expand([tmp_path]) == ([tmp_path], tmp_path)  # not a Slurm job's: the caller says


def test_a_one_node_step_is_its_one_session(tmp_path):
    only = node_session(tmp_path, 0, nodes=1)
    assert merge.expand([tmp_path / "slurm-4242-0"]) == ([only], only)


def test_a_node_without_a_session_yet_is_said_not_guessed(tmp_path):
    a = node_session(tmp_path, 0, nodes=3)
    with pytest.raises(merge.MergeError) as err:
        merge.expand([tmp_path / "slurm-4242-0"])
    assert str(err.value) == (f"{tmp_path / 'slurm-4242-0'}: 2 of 3 nodes have no session yet "
                              f"(gpu02, gpu03: not started yet, or not copied here); one node "
                              f"alone: tuimon summary {a}")


def test_a_node_twice_or_two_steps_in_one_directory_is_one_line(tmp_path):
    node_session(tmp_path, 0)
    node_session(tmp_path, 0, name="gpu01-again")
    with pytest.raises(merge.MergeError, match="Slurm node 0 has two sessions here"):
        merge.expand([tmp_path / "slurm-4242-0"])
    mixed = tmp_path / "mixed"
    for step in ("0", "1"):
        node_session(mixed, 0, step=step).rename(mixed / f"s{step}")
    with pytest.raises(merge.MergeError, match=r"several Slurm job steps \(slurm-4242-0, slurm-4242-1\)"):
        merge.expand([mixed])


def test_tuimon_ls_lists_each_node_s_session_in_a_job_s_directory(tmp_path):
    node_session(tmp_path, 1)
    node_session(tmp_path, 0)
    names = [str(s.path.relative_to(tmp_path)) for s in listing.sessions(tmp_path)]
    assert sorted(names) == ["slurm-4242-0/gpu01", "slurm-4242-0/gpu02"]


def test_a_node_still_running_is_a_warning_the_job_s_figures_are_those_so_far(tmp_path):
    from tuimon.cli.summary import read_warnings

    meta = {"nodes": [{"session": str(tmp_path / "gpu01"), "status": "done"},
                      {"session": str(tmp_path / "gpu02"), "status": "running"}]}
    assert read_warnings(tmp_path, meta, 0) == [
        "1 of 2 nodes still running (gpu02): the job's figures are those recorded so far"]


def test_a_requeued_job_s_step_gets_a_directory_of_its_own():
    """srun's SLURM_RESTART_COUNT: the job requeued, its steps count from 0 again."""
    assert slurm.from_env({**srun_env(0), "SLURM_RESTART_COUNT": "2"}).place == "slurm-4242-0-r2/gpu01"
    assert slurm.from_env({**srun_env(0), "SLURM_RESTART_COUNT": "0"}).job_dir == "slurm-4242-0"
