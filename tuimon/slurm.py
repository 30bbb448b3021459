"""Slurm's ``srun`` on tuimon's side, without Slurm: which task of which job step this process
is, read from the environment srun sets in every task (srun(1), OUTPUT ENVIRONMENT VARIABLES),
and where its session goes.

Under srun every node's tuimon writes its session into one directory the job shares:
``<--out>/slurm-<job id>-<step id>/<node name>/`` (``-r<N>`` after the step id once the job was
requeued N times: its steps count from 0 again), so ``tuimon summary`` (replay, report) reads
the whole job from that one directory (sessiondir/merge.py). A job step's own figures
(SLURM_STEP_NUM_NODES, _NUM_TASKS, _TASKS_PER_NODE, _NODELIST) are read before the job's
(SLURM_NNODES, SLURM_NTASKS, ...): a job step may use fewer nodes than its allocation. A batch
script or an ``salloc`` shell has SLURM_JOB_ID but no SLURM_STEP_ID: not a task srun started,
so its session is named as anywhere else. Shared by the CLI (cli/run.py, cli/jobs.py) and the
readers of a job's directory; imports nothing from tuimon.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass

PREFIX = "slurm-"  # a Slurm job's directory under --out: slurm-<job id>-<step id>


class SlurmError(ValueError):
    """srun's environment cannot be read (a value that is not what srun writes); one line."""


@dataclass(frozen=True)
class SlurmTask:
    """This process as srun started it: one task of one job step."""

    job_id: str
    step_id: str
    node_id: int  # SLURM_NODEID: this node's place in the job step, from 0
    nodes: int  # the job step's nodes
    task: int  # SLURM_PROCID: this task's place among the job step's tasks
    tasks: int  # the job step's tasks
    local_task: int  # SLURM_LOCALID: its place among this node's tasks
    tasks_here: int  # the job step's tasks on this node
    node_name: str  # SLURMD_NODENAME ("" when unset: then node<K>)
    node_list: tuple[str, ...]  # the job step's nodes, in node id order ((): unreadable)
    restart: int = 0  # SLURM_RESTART_COUNT: a requeued job's steps count from 0 again

    @property
    def job_dir(self) -> str:
        """The job step's directory under --out: every node's session goes into it."""
        again = f"-r{self.restart}" if self.restart else ""
        return f"{PREFIX}{self.job_id}-{self.step_id}{again}"

    @property
    def node_dir(self) -> str:
        """This node's session directory inside the job's directory."""
        return safe_name(self.node_name) or f"node{self.node_id}"

    @property
    def place(self) -> str:
        return f"{self.job_dir}/{self.node_dir}"

    def to_dict(self) -> dict:
        """As meta.json keeps it (``slurm``): what a reader of the job's directory checks."""
        return {**asdict(self), "node_list": list(self.node_list), "job_dir": self.job_dir}


def from_env(env: Mapping[str, str]) -> SlurmTask | None:
    """This process's task when srun started it (SLURM_JOB_ID and SLURM_STEP_ID set), else None;
    SlurmError when a value is not one srun writes."""
    job = env.get("SLURM_JOB_ID") or env.get("SLURM_JOBID")
    step = env.get("SLURM_STEP_ID") or env.get("SLURM_STEPID")
    if not job or not step:
        return None
    node_id = _number(env, "SLURM_NODEID", 0)
    nodes = _number(env, "SLURM_STEP_NUM_NODES", None) or _number(env, "SLURM_NNODES", 1)
    tasks = _number(env, "SLURM_STEP_NUM_TASKS", None) or _number(env, "SLURM_NTASKS", 1)
    per_node = env.get("SLURM_STEP_TASKS_PER_NODE") or env.get("SLURM_TASKS_PER_NODE") or ""
    try:
        tasks_here = tasks_on_node(per_node, node_id) if per_node else max(1, tasks // max(nodes, 1))
        names = tuple(expand_hostlist(env.get("SLURM_STEP_NODELIST") or env.get("SLURM_JOB_NODELIST")
                                      or env.get("SLURM_NODELIST") or ""))
    except ValueError as exc:
        raise SlurmError(f"srun's environment: {exc}") from None
    return SlurmTask(job_id=safe_name(job), step_id=safe_name(step), node_id=node_id, nodes=nodes,
                     task=_number(env, "SLURM_PROCID", 0), tasks=tasks,
                     local_task=_number(env, "SLURM_LOCALID", 0), tasks_here=tasks_here,
                     node_name=env.get("SLURMD_NODENAME", ""),
                     node_list=names if len(names) == nodes else (),
                     restart=_number(env, "SLURM_RESTART_COUNT", 0))


def _number(env: Mapping[str, str], name: str, default: int | None) -> int | None:
    value = env.get(name)
    if value is None or value == "":
        return default
    if not value.isdigit():
        raise SlurmError(f"srun's environment: {name}={value!r} is not a number")
    return int(value)


def tasks_on_node(spec: str, node_id: int) -> int:
    """The tasks on node ``node_id`` from SLURM_TASKS_PER_NODE's form: "2(x3),1" is 2 tasks on
    each of the first three nodes, then 1. ValueError when it is not that form or too short."""
    k = 0
    for part in spec.split(","):
        m = re.fullmatch(r"(\d+)(?:\(x(\d+)\))?", part.strip())
        if m is None:
            raise ValueError(f"tasks per node {spec!r}: not Slurm's form (e.g. 2(x3),1)")
        k += int(m.group(2) or 1)
        if node_id < k:
            return int(m.group(1))
    raise ValueError(f"tasks per node {spec!r} names no node {node_id}")


def expand_hostlist(text: str) -> list[str]:
    """Slurm's host list expression in full: "gpu[01-03,7],login" is gpu01 gpu02 gpu03 gpu7
    login (a range keeps its zero padding). ValueError when a bracket is not closed."""
    out: list[str] = []
    for item in _split_top(text):
        names = [""]
        for literal, ranges in re.findall(r"([^\[\]]*)(?:\[([^\]]*)\])?", item):
            names = [n + literal for n in names]
            if ranges:
                names = [n + r for n in names for r in _expand_ranges(ranges)]
        out += [n for n in names if n]
    return out


def _split_top(text: str) -> list[str]:
    """Split on the commas outside brackets."""
    items, depth, cur = [], 0, ""
    for ch in text:
        depth += {"[": 1, "]": -1}.get(ch, 0)
        if depth not in (0, 1):
            raise ValueError(f"host list {text!r}: unbalanced brackets")
        if ch == "," and depth == 0:
            items.append(cur)
            cur = ""
        else:
            cur += ch
    if depth:
        raise ValueError(f"host list {text!r}: unbalanced brackets")
    return [i for i in [*items, cur] if i]


def _expand_ranges(ranges: str) -> list[str]:
    out = []
    for part in ranges.split(","):
        lo, _, hi = part.partition("-")
        if not lo.isdigit() or (hi and not hi.isdigit()):
            raise ValueError(f"host range [{ranges}]: not Slurm's form (e.g. [01-04,7])")
        out += [str(n).zfill(len(lo)) for n in range(int(lo), int(hi or lo) + 1)]
    return out


def safe_name(text: str) -> str:
    """A name fit for a directory (a node's name, a job id): path separators and odd characters
    become '_'."""
    return re.sub(r"[^A-Za-z0-9._+-]", "_", text).lstrip(".")
