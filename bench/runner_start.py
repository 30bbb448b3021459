"""A recipe runner's start and end, spawned against forked (the fork server), alternated.

Each round starts one runner of tests/recipes/slow_steps.py (a Linear, 5 steps of 20 ms) as the
supervisor does (control/child.py), spawned as its own ``python -m tuimon.runner`` and then
forked by a fork server that is already ready, and times: spawn → run_started (its start: the
imports, the build), and the last step → the end of its event pipe (its exit).

    python bench/runner_start.py --rounds 8
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tuimon.control.child import Child  # noqa: E402
from tuimon.control.forkserver import ForkServer  # noqa: E402
from tuimon.settings import RunSettings  # noqa: E402

RECIPE = str(ROOT / "tests" / "recipes" / "slow_steps.py")


def one(tmp: Path, forks: ForkServer | None, n: int) -> tuple[float, float]:
    t0 = time.monotonic()
    marks: dict[str, float] = {}
    done = threading.Event()

    def deliver(run, batch):
        if batch is None:
            marks["eof"] = time.monotonic()
            done.set()
            return
        for e in batch:
            if e["type"] == "run_started":
                marks["started"] = time.monotonic()
            elif e["type"] == "finished":
                marks["finished"] = time.monotonic()

    settings = RunSettings.make(run=f"r{n}", recipe=RECIPE, mode="eager", steps=5, device="cpu",
                                threads=1, warmup="0", auto_profile=False,
                                knobs=(("sleep_ms", "20"),))
    child = Child.spawn(settings, cache=tmp / "cache", log_path=tmp / f"r{n}.log",
                        deliver=deliver, forks=forks)
    done.wait(300)
    assert child.reap() == 0, (tmp / f"r{n}.log").read_text()
    return marks["started"] - t0, marks["eof"] - marks["finished"]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=8)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        forks = ForkServer({**os.environ, "PYTHONUNBUFFERED": "1"}, tmp / "forkserver.log")
        forks.begin()
        while forks.ready_s is None:
            time.sleep(0.05)
        got: dict[str, list[tuple[float, float]]] = {"spawned": [], "forked": []}
        for n in range(args.rounds):
            got["spawned"].append(one(tmp, None, 2 * n))
            got["forked"].append(one(tmp, forks, 2 * n + 1))
        forks.close()
    print(f"fork server's imports: {forks.ready_s:.2f} s; {args.rounds} rounds, alternated; "
          f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}")
    for how, rows in got.items():
        start = statistics.median(r[0] for r in rows)
        end = statistics.median(r[1] for r in rows)
        print(f"{how:8s} start (spawn -> run_started) median {start:.2f} s "
              f"[{min(r[0] for r in rows):.2f}-{max(r[0] for r in rows):.2f}]  "
              f"end (finished -> exit) median {end:.2f} s "
              f"[{min(r[1] for r in rows):.2f}-{max(r[1] for r in rows):.2f}]")


if __name__ == "__main__":
    main()
