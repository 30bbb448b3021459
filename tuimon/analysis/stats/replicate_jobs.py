"""--repeats K on a torchrun job: the combined row's job from its K jobs (stats/replicates.py).
Each rank's times are the median over the rounds the row rests on, its status the worst; a
straggler only when the same rank straggled in every round (one round's is that round's
machine). Compile divergence is round 1's: later rounds start warm, where it cannot show."""

from __future__ import annotations

import statistics

from tuimon.analysis.stats.ranks import WAITED
from tuimon.analysis.stats.records import Job
from tuimon.analysis.stats.rows import RunStats
from tuimon.analysis.stats.stragglers import skew_pct

TIMES = ("median_ms", "p90_ms", "own_ms", "pre_ms")
WORST = ("failed", "killed", "stopped", "running", "done")  # a rank's status, worst first


def combine_job(group: list[RunStats], timed: list[RunStats]) -> Job:
    """``group``: every round's row of the variant, round 1 first; ``timed``: those its step
    time rests on."""
    first = group[0].job
    if not first.world_size:
        return Job()
    timed_jobs = [r.job for r in timed if r.job.ranks] or [r.job for r in group if r.job.ranks]
    every: dict[int, list[dict]] = {}
    for j in (r.job for r in group):
        for x in j.ranks:
            every.setdefault(x["rank"], []).append(x)
    ranks = []
    for rank, xs in sorted(every.items()):
        timed_xs = [x for j in timed_jobs for x in j.ranks if x["rank"] == rank]
        row = {**xs[0], "steps": sum(x.get("steps") or 0 for x in xs),
               "status": next((s for s in WORST if any(x.get("status") == s for x in xs)),
                              xs[0].get("status")),
               "error": next((x["error"] for x in xs if x.get("error")), None)}
        for key in TIMES:
            values = [x[key] for x in timed_xs if x.get(key) is not None]
            row[key] = statistics.median(values) if values else None
        row["waited"] = (row["own_ms"] is not None and row["median_ms"] is not None
                         and row["own_ms"] < WAITED * row["median_ms"])
        ranks.append(row)
    straggled = [{s["rank"] for s in j.stragglers} for j in timed_jobs]
    always = set.intersection(*straggled) if straggled else set()
    stragglers = [s for s in (timed_jobs[0].stragglers if timed_jobs else []) if s["rank"] in always]
    kept = {s["rank"] for s in stragglers}
    for row in ranks:
        if row["rank"] not in kept:
            row["slower_pct"] = row["straggler_since"] = None
    own = {x["rank"]: x["own_ms"] for x in ranks if x["own_ms"] is not None}
    return Job(world_size=first.world_size, backend=first.backend,
               hosts=list(dict.fromkeys(h for r in group for h in r.job.hosts)), ranks=ranks,
               skew_pct=skew_pct(own), stragglers=stragglers,
               compile_divergence=list(first.compile_divergence))
