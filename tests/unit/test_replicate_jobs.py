"""A --repeats K torchrun job's combined row keeps its world (stats/replicate_jobs.py): world
size, backend and hosts, each rank's medians over the timed rounds, a straggler only when the
same rank straggled in every round, round 1's compile divergence."""

from __future__ import annotations

from tuimon.analysis.stats.records import Job, Timing
from tuimon.analysis.stats.replicate_jobs import combine_job
from tuimon.analysis.stats.replicates import _combined
from tuimon.analysis.stats.rows import RunStats
from tuimon.report.rank_text import straggler_text, world_text


def rank(r: int, ms: float, own: float, status: str = "done", **kw) -> dict:
    return {"rank": r, "median_ms": ms, "p90_ms": ms * 1.1, "own_ms": own, "pre_ms": None,
            "status": status, "error": None, "steps": 30, "slower_pct": None,
            "straggler_since": None, **kw}


def job_round(k: int, slow_rank: int | None, ms: float) -> RunStats:
    ranks = [rank(0, ms, ms * 0.6), rank(1, ms, ms * (1.0 if slow_rank == 1 else 0.6))]
    stragglers = []
    if slow_rank is not None:
        ranks[slow_rank].update(slower_pct=60.0, straggler_since=5)
        stragglers = [{"rank": slow_rank, "slower_pct": 60.0, "slower_ms": ms * 0.4, "since": 5,
                       "steps": 25}]
    return RunStats(f"eager-fp32-r{k}", "eager", "fp32", status="done", replicate=k,
                    timing=Timing(median_ms=ms, p10_ms=ms * 0.9, p90_ms=ms * 1.1, steps=30, measured=25),
                    job=Job(world_size=2, backend="gloo", hosts=["box"], ranks=ranks,
                            stragglers=stragglers))


def test_the_combined_row_keeps_the_jobs_world_and_its_ranks():
    group = [job_round(1, 1, 10.0), job_round(2, 1, 12.0), job_round(3, 1, 11.0)]
    row = _combined(group, {})
    assert row.job.world_size == 2 and row.job.backend == "gloo" and row.job.hosts == ["box"]
    assert world_text(row) == "2 ranks · gloo · 1 host"
    by = {x["rank"]: x for x in row.job.ranks}
    assert by[0]["median_ms"] == 11.0 and by[0]["steps"] == 90 and by[0]["waited"] is True
    assert by[1]["own_ms"] == 11.0  # rank 1 straggled in every round: it is the straggler
    assert [s["rank"] for s in row.job.stragglers] == [1]
    assert straggler_text(row).startswith("rank 1: 60 % slower")
    assert round(row.job.skew_pct) == 67  # own 11.0 against the median rank's 6.6


def test_a_straggler_of_one_round_is_that_rounds_machine():
    group = [job_round(1, 1, 10.0), job_round(2, None, 10.0), job_round(3, None, 10.0)]
    row = _combined(group, {})
    assert row.job.stragglers == []
    assert all(x["slower_pct"] is None for x in row.job.ranks)


def test_a_rank_that_failed_in_any_round_says_so_and_a_single_process_has_no_job():
    group = [job_round(1, None, 10.0), job_round(2, None, 10.0)]
    group[1].job.ranks[0].update(status="failed", error="RuntimeError: boom")
    job = combine_job(group, group)
    assert job.ranks[0]["status"] == "failed" and job.ranks[0]["error"] == "RuntimeError: boom"
    plain = RunStats("eager-fp32-r1", "eager", "fp32", replicate=1)
    assert combine_job([plain], [plain]) == Job()


def test_a_combined_rows_median_lies_between_its_p10_and_p90():
    """The row's median is the geometric mean of its processes' medians; its p10 and p90 are
    theirs alike, so the median stays inside them (issue 35's README session read "1.56 s
    (1.30 s–1.54 s)" with medians of each: a slow round 1 and two faster rounds)."""
    def process(k: int, p10: float, median: float, p90: float) -> RunStats:
        return RunStats(f"eager-amp-r{k}", "eager", "amp", status="done", replicate=k,
                        timing=Timing(median_ms=median, p10_ms=p10, p90_ms=p90, steps=30, measured=25))

    row = _combined([process(1, 1900.0, 2030.0, 2200.0), process(2, 1280.0, 1350.0, 1400.0),
                     process(3, 1300.0, 1380.0, 1540.0)], {})
    t = row.timing
    assert t.p10_ms < t.median_ms < t.p90_ms
    assert round(t.median_ms) == round((2030.0 * 1350.0 * 1380.0) ** (1 / 3))
    assert round(t.p10_ms) == round((1900.0 * 1280.0 * 1300.0) ** (1 / 3))
