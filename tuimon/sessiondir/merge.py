"""Several session directories of one torchrun job, read as one session.

On a cluster each node runs its own tuimon (``tuimon run -- torchrun --nnodes N --node-rank K
...``); each node's session records the ranks of that node. Read together (``tuimon summary /
replay / attach DIR DIR ...``, and ``analysis.load_session`` for every reader) they are one job: every
rank of every variant, joined into the job's steps as on one node.

Sessions are one job when their ranks name the same rendezvous (torchrun's run id, or the
master address and port when the id is torchrun's default "none") for each variant they share,
the same world size, and no rank twice. The merged stream is every node's events in time
order, with three adjustments, made per event (``node_event``) so a live follow of several
files (ui/sources.py) reads them as the whole-file merge does:
- the job-level probe figures (a run's process tree) are the lead node's (the one with the
  lowest rank); the other nodes' samples keep only their ranks' own figures;
- the other nodes' session-level start, end and probe notes are left out;
- each rank's ``run_started`` is put before the job's first step (nodes' clocks differ a little).
A variant that failed on any node failed (the statistics never let a "finished" undo a
"failed").

Under Slurm's srun each node's session goes into the job's directory
(``slurm-<job>-<step>/<node>/``, tuimon/slurm.py), and that one directory stands for the job
(``expand``): its nodes' sessions, found by the ``slurm`` record their meta.json keeps, read as
above once every node of the job has one; until then one line says which have none.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from tuimon import events
from tuimon.sessiondir import store


class MergeError(ValueError):
    """These directories are not one job's sessions; one line."""


def expand(given: Sequence[str | Path]) -> tuple[list[Path], Path]:
    """(the sessions to read as one, where the job's files go): a Slurm job's directory stands
    for its nodes' sessions (``slurm_sessions``) and the job's files go into it; otherwise the
    paths as given, the files into the first. A one-node job is its one session."""
    paths = [Path(p) for p in given]
    if len(paths) != 1 or store.is_session(paths[0]) or not paths[0].is_dir():
        return paths, paths[0]
    nodes = slurm_sessions(paths[0])
    if nodes is None:
        return paths, paths[0]  # not a Slurm job's directory: the caller's check says what it is
    return nodes, paths[0] if len(nodes) > 1 else nodes[0]


def slurm_sessions(path: Path) -> list[Path] | None:
    """The node sessions of the Slurm job whose directory ``path`` is, in node order; None when
    no session under it was started by srun. MergeError (one line) when a node of the job has
    no session there yet, has two, or the sessions are of different job steps."""
    found = [(p, store.read_meta(p)) for p in sorted(path.iterdir())
             if p.is_dir() and store.is_session(p)]
    nodes = [(p, m["slurm"]) for p, m in found if isinstance(m.get("slurm"), dict)]
    if not nodes:
        return None
    steps = sorted({s.get("job_dir") or f"{s.get('job_id')}.{s.get('step_id')}" for _, s in nodes})
    if len(steps) > 1:
        raise MergeError(f"{path} holds the sessions of several Slurm job steps ({', '.join(steps)}): "
                         "give one job step's directory, or the sessions of one job's nodes")
    by_node: dict[int, Path] = {}
    for p, s in nodes:
        if s.get("node_id") in by_node:
            raise MergeError(f"{path}: Slurm node {s.get('node_id')} has two sessions here "
                             f"({by_node[s['node_id']].name}, {p.name}): give the sessions of "
                             "one run of the job (tuimon summary DIR DIR ...)")
        by_node[s.get("node_id")] = p
    expected = max(int(s.get("nodes") or 1) for _, s in nodes)
    missing = [k for k in range(expected) if k not in by_node]
    if missing:
        names: list[str] = next((s["node_list"] for _, s in nodes if s.get("node_list")), [])
        which = ", ".join(names[k] if k < len(names) else f"node {k}" for k in missing)
        has = "has" if len(missing) == 1 else "have"
        raise MergeError(f"{path}: {len(missing)} of {expected} nodes {has} no session yet "
                         f"({which}: not started yet, or not copied here); one node alone: "
                         f"tuimon summary {by_node[min(by_node)]}")
    return [by_node[k] for k in sorted(by_node)]


def ranks_of(evs: list[dict]) -> dict[str, dict[int, dict]]:
    """Run -> rank -> its run_started event."""
    out: dict[str, dict[int, dict]] = {}
    for e in evs:
        if e["type"] == events.RUN_STARTED and e.get("rank") is not None:
            out.setdefault(e["run"], {})[e["rank"]] = e
    return out


def job_key(started: dict) -> str:
    """The rendezvous a rank joined: torchrun's run id, else its master address and port."""
    job_id = started.get("job_id")
    return job_id if job_id and job_id != "none" else f"master {started.get('master')}"


def check(sessions: list[tuple[Path, dict, list[dict]]]) -> int:
    """MergeError unless the sessions are nodes of one job; returns the lead node's index."""
    seen: dict[tuple[str, int], Path] = {}
    keys: dict[str, tuple[str, Path]] = {}
    worlds: set[int] = set()
    lowest = []
    for path, _, evs in sessions:
        ranks = ranks_of(evs)
        if not ranks:
            raise MergeError(f"{path}: no ranks in this session (not a torchrun job's session, or "
                             "none of its ranks has started)")
        for run, by_rank in ranks.items():
            for rank, started in by_rank.items():
                if (run, rank) in seen:
                    raise MergeError(f"rank {rank} of {run} is in {seen[run, rank]} and in {path}: "
                                     "these are not sessions of one job's nodes")
                seen[run, rank] = path
                key = job_key(started)
                if run in keys and keys[run][0] != key:
                    raise MergeError(f"{run} in {keys[run][1]} joined {keys[run][0]}, in {path} "
                                     f"{key}: not one job")
                keys.setdefault(run, (key, path))
                if started.get("world_size"):
                    worlds.add(started["world_size"])
        lowest.append(min(r for by_rank in ranks.values() for r in by_rank))
    if len(worlds) > 1:
        raise MergeError(f"the sessions' ranks say different world sizes ({sorted(worlds)}): not one job")
    return lowest.index(min(lowest))


def node_event(e: dict, lead: bool) -> dict | None:
    """One node's event as the merged session holds it (None: left out)."""
    if lead:
        return e
    if e["type"] == events.SAMPLE:  # only its ranks' own figures count
        runs = {run: {"ranks": v["ranks"]} for run, v in e.get("runs", {}).items() if v.get("ranks")}
        return {**e, "runs": runs, "system": {}}
    if e.get("run") is None and e["type"] in (events.SESSION_STARTED, events.SESSION_ENDED,
                                               events.PROBE_INFO):
        return None
    return e


def merge(sessions: list[tuple[Path, dict, list[dict]]]) -> tuple[dict, list[dict]]:
    """(meta, events) of the job the sessions' nodes ran."""
    lead = check(sessions)
    tagged = []
    for k, (_, _, evs) in enumerate(sessions):
        for n, given in enumerate(evs):
            e = node_event(given, k == lead)
            if e is not None:
                tagged.append((e.get("t", 0.0), k, n, e))
    tagged.sort(key=lambda x: x[:3])
    merged = _starts_first([e for *_, e in tagged])
    return _meta(sessions, lead), merged


def load(paths: Sequence[str | Path]) -> tuple[dict, list[dict], int]:
    """(meta, events, unreadable lines) of several nodes' sessions; MergeError if not one job."""
    sessions, bad = [], 0
    for path in paths:
        evs, unreadable = store.read_events(path)
        sessions.append((Path(path), store.read_meta(path), evs))
        bad += unreadable
    meta, evs = merge(sessions)
    return meta, evs, bad


def _starts_first(evs: list[dict]) -> list[dict]:
    """Each rank's run_started before its job's first step (nodes' clocks differ a little)."""
    first_step: dict[str, int] = {}
    for n, e in enumerate(evs):
        if e["type"] == events.STEP and e.get("run") not in first_step:
            first_step[e["run"]] = n
    late = [(n, e) for n, e in enumerate(evs) if e["type"] == events.RUN_STARTED
            and e.get("rank") is not None and n > first_step.get(e.get("run", ""), n)]
    if not late:
        return evs
    moved = {n for n, _ in late}
    out = []
    for n, e in enumerate(evs):
        if n in moved:
            continue
        if n in first_step.values():
            out += [x for _, x in late if x["run"] == e["run"]]
        out.append(e)
    return out


def _meta(sessions: list[tuple[Path, dict, list[dict]]], lead: int) -> dict:
    meta = dict(sessions[lead][1])
    nodes = []
    for path, m, evs in sessions:
        ranks = sorted({r for by_rank in ranks_of(evs).values() for r in by_rank})
        nodes.append({"session": str(path), "host": m.get("host"), "ranks": ranks,
                      "status": m.get("status")})
    meta["nodes"] = nodes
    step = meta.get("slurm") or {}  # a Slurm job: named as its directory is
    name = step.get("job_dir") or meta.get("name", "?")
    meta["name"] = f"{name} ({len(sessions)} nodes)"
    meta["host"] = ", ".join(str(n["host"]) for n in nodes)
    statuses = [n["status"] for n in nodes]
    meta["status"] = next((s for s in ("running", "failed", "interrupted") if s in statuses),
                          statuses[lead])
    return meta
