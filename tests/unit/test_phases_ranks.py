"""Issue 25, ranks: the straggler named with the phase it is slow in — backward taken less the
rank's wait for the others in DDP's all-reduce (synthetic jobs with known splits, and a real
torchrun job with one rank slowed in forward).

The real runs are in tests/e2e/test_phases_ranks_runs.py."""

from __future__ import annotations

import random
import sys

import pytest

from tuimon import events
from tuimon.analysis.stats import summarize
from tuimon.report.rank_text import straggler_text, strip_text

PY = sys.executable


def split_job(slow_rank: int, slow_in: str, slow_ms: float = 4.0, steps: int = 120, seed: int = 0,
              rank0_other: float = 0.0):
    """Two DDP-like ranks: data 1, forward 3, backward 4, optimizer 1, other 0.2 ms, plus
    ``slow_ms`` in ``slow_in`` on ``slow_rank``. Every rank's all-reduce (in backward) waits for
    the last one to get there, so the fast rank's backward holds the wait. ``rank0_other``: rank
    0's extra work after the step's parts (logging), which makes its step a hair longer."""
    rng = random.Random(seed)
    run = "eager-script"
    out = [events.make(events.RUN_QUEUED, run, mode="eager", precision="script")]
    for r in (0, 1):
        out.append(events.make(events.RUN_STARTED, run, mode="eager", precision="script", device="cpu",
                               rank=r, world_size=2, backend="gloo", job_id="j", pid=10 + r))
    for i in range(steps):
        parts = {}
        for r in (0, 1):
            p = {k: v * (1 + rng.uniform(0, 0.03)) for k, v in
                 (("data", 1.0), ("forward", 3.0), ("backward", 4.0), ("optimizer", 1.0))}
            if r == slow_rank and slow_in in ("data", "forward"):
                p[slow_in] += slow_ms
            parts[r] = p
        pre = {r: p["data"] + p["forward"] for r, p in parts.items()}
        for r, p in parts.items():
            p["backward"] += max(pre.values()) - pre[r]  # waits in the all-reduce
        for r, p in parts.items():
            ms = sum(p.values()) + 0.2 + (rank0_other if r == 0 else 0.0)
            out.append(events.make(events.STEP, run, i=i, t=1000.0 + i * 0.02, ms=round(ms, 4),
                                   data_ms=p["data"], n=32, loss=1.0, rank=r, pre_ms=round(pre[r], 4),
                                   phase="warmup" if i == 0 else "steady",
                                   ph=[round(p[k] * 1000) for k in ("data", "forward", "backward",
                                                                    "optimizer")]))
    for r in (0, 1):
        out.append(events.make(events.FINISHED, run, reason="steps", seconds=3.0, rank=r))
    out.append(events.make(events.FINISHED, run, reason="steps", ranks=2))
    return out


@pytest.mark.parametrize("slow_in", ["forward", "data"])
def test_the_straggler_is_named_with_its_slow_phase(slow_in):
    (row,) = summarize(split_job(1, slow_in)).runs
    (s,) = row.job.stragglers
    assert s["rank"] == 1 and s["phase"] == slow_in, s
    assert s["phase_ms"] == pytest.approx(4.0, abs=0.3)
    assert f"slow in {slow_in} (+4." in straggler_text(row)
    slow = strip_text(row)[-1]
    assert slow.text == f"straggler r1 in {'fwd' if slow_in == 'forward' else 'data'}"
    assert slow.figures["part"] == "straggler"  # the strip's colour reads the part, not its words
    # The job's steps carry the slowest rank's split, so the panel shows the job's phases.
    assert row.phases.step_phases["forward"]["median_ms"] > 3.0


def test_the_jobs_split_is_the_rank_the_others_waited_for():
    """Every rank's step ends together: the job's phases come from the last rank to reach
    backward (here rank 1, slow in data), not from whichever rank's time is a hair longer (rank
    0's: it logs)."""
    (row,) = summarize(split_job(1, "data", slow_ms=6.0, rank0_other=0.3)).runs
    data = row.phases.step_phases["data"]["median_ms"]
    assert data == pytest.approx(7.0, rel=0.05)  # rank 1's 1 + 6 ms, at every step
    assert row.phases.step_phases["backward"]["median_ms"] == pytest.approx(4.0, rel=0.05)  # no wait
