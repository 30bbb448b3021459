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
"""

from __future__ import annotations

from pathlib import Path

from tuimon import events
from tuimon.sessiondir import store


class MergeError(ValueError):
    """These directories are not one job's sessions; one line."""


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
        for n, e in enumerate(evs):
            e = node_event(e, k == lead)
            if e is not None:
                tagged.append((e.get("t", 0.0), k, n, e))
    tagged.sort(key=lambda x: x[:3])
    merged = _starts_first([e for *_, e in tagged])
    return _meta(sessions, lead), merged


def load(paths: list[str | Path]) -> tuple[dict, list[dict], int]:
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
            and e.get("rank") is not None and n > first_step.get(e.get("run"), n)]
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
    meta["name"] = f"{meta.get('name', '?')} ({len(sessions)} nodes)"
    meta["host"] = ", ".join(str(n["host"]) for n in nodes)
    statuses = [n["status"] for n in nodes]
    meta["status"] = next((s for s in ("running", "failed", "interrupted") if s in statuses),
                          statuses[lead])
    return meta
