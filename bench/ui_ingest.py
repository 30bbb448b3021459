"""UI benchmarks, run by hand: .venv/bin/python bench/ui_ingest.py [--steps-10m]

1. time to first frame: App start until the panels of a recorded session are drawn;
2. ingest: 4 synthetic runs streaming 1 000 steps/s each (in batches, as runners send them)
   for 10 s: events/s absorbed, redraw time per tick, key latency, UI process CPU;
3. flood: as many events as the UI absorbs in 5 s while redraws stay under 100 ms;
4. memory: RSS of the session model after 10 M step events (bounded history), with --steps-10m.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tuimon import events  # noqa: E402
from tuimon.ui.app import TuimonApp  # noqa: E402
from tuimon.ui.model import SessionModel  # noqa: E402
from tuimon.ui.sources import ReplaySource  # noqa: E402

RUNS = [("eager", "fp32"), ("default", "fp32"), ("eager", "amp"), ("default", "amp")]


class SyntheticSource:
    """Streams step events for 4 runs at ``rate`` steps/s each (None: as fast as possible)."""

    read_only = True

    def __init__(self, path: Path, rate: float | None, seconds: float) -> None:
        self.path, self.rate, self.seconds = path, rate, seconds
        self.sent = 0
        self._stop = threading.Event()

    def start(self, deliver) -> None:
        threading.Thread(target=self._run, args=(deliver,), daemon=True).start()

    def _run(self, deliver) -> None:
        for mode, precision in RUNS:
            run = f"{mode}-{precision}"
            deliver([events.make(events.RUN_QUEUED, run, mode=mode, precision=precision),
                     events.make(events.RUN_STARTED, run, mode=mode, precision=precision,
                                 device="cpu", device_name="synthetic")])
        start = time.perf_counter()
        i = 0
        while not self._stop.is_set() and time.perf_counter() - start < self.seconds:
            n = int(self.rate * 0.25) if self.rate else 2000  # one runner flush: 0.25 s of steps
            t = time.time()
            for mode, precision in RUNS:
                run = f"{mode}-{precision}"
                deliver([{"type": "step", "t": t, "run": run, "i": i + k, "ms": 1.0 + (k % 7) * 0.01,
                          "data_ms": 0.01, "n": 32, "loss": 1.0 / (1 + i + k),
                          "phase": "warmup" if i + k < 3 else "steady"} for k in range(n)])
            self.sent += n * len(RUNS)
            i += n
            if self.rate:
                time.sleep(max(0.0, start + i / self.rate - time.perf_counter()))

    def close(self, timeout: float = 0) -> None:
        self._stop.set()

    def log_path(self, run: str) -> Path:
        return self.path / f"{run}.log"


def timed_ticks(app: TuimonApp) -> list[float]:
    durations: list[float] = []
    original = app.tick

    def tick() -> None:
        t = time.perf_counter()
        original()
        durations.append((time.perf_counter() - t) * 1000)

    app.tick = tick
    return durations


async def first_frame() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        session = Path(shutil.copytree(ROOT / "tests/data/session_tiny_mlp", Path(tmp) / "s"))
        t0 = time.perf_counter()
        app = TuimonApp(ReplaySource(session, follow=False))
        async with app.run_test(size=(120, 32)) as pilot:
            while not list(app.query(".run-panel .numbers")) or not app.model.ended:
                await pilot.pause(0.01)
            print(f"time to first frame with panels (replay, in-process): "
                  f"{(time.perf_counter() - t0) * 1000:.0f} ms")


async def stream(rate: float | None, seconds: float) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        source = SyntheticSource(Path(tmp), rate, seconds)
        app = TuimonApp(source)
        ticks = timed_ticks(app)
        proc = psutil.Process()
        async with app.run_test(size=(160, 45)) as pilot:
            cpu0, t0 = proc.cpu_times(), time.perf_counter()
            latencies = []
            while time.perf_counter() - t0 < seconds:
                await pilot.pause(0.5)
                k = time.perf_counter()
                await pilot.press("question_mark")  # open help ...
                await pilot.press("escape")  # ... and close it: two key round trips
                latencies.append((time.perf_counter() - k) * 1000 / 2)
            wall = time.perf_counter() - t0
            cpu1 = proc.cpu_times()
            cpu = (cpu1.user + cpu1.system - cpu0.user - cpu0.system) / wall * 100
            source.close()
            await pilot.pause(0.5)
            app.tick()
            seen = app.model.events_seen
        label = f"{rate:.0f} steps/s × 4 runs" if rate else "flood"
        print(f"{label}: sent {source.sent:,}, ingested {seen:,} events in {wall:.1f} s "
              f"({seen / wall:,.0f}/s); tick median {statistics.median(ticks):.1f} ms, "
              f"p95 {sorted(ticks)[int(len(ticks) * 0.95)]:.1f} ms, max {max(ticks):.1f} ms; "
              f"key latency median {statistics.median(latencies):.0f} ms, "
              f"max {max(latencies):.0f} ms; UI process CPU {cpu:.0f} % (incl. the generator)")


def memory(total: int = 10_000_000) -> None:
    proc = psutil.Process()
    model = SessionModel()
    model.add(events.make(events.RUN_QUEUED, "eager-fp32", mode="eager", precision="fp32"))
    rss0 = proc.memory_info().rss
    t0 = time.perf_counter()
    for i in range(total):
        model.add({"type": "step", "t": 0.0, "run": "eager-fp32", "i": i, "ms": 1.0, "data_ms": 0.0,
                   "n": 32, "loss": 1.0, "phase": "steady"})
        if i in (1_000_000 - 1, total - 1):
            print(f"after {i + 1:,} steps: RSS +{(proc.memory_info().rss - rss0) / 2**20:.1f} MiB "
                  f"({time.perf_counter() - t0:.0f} s)")
    t = time.perf_counter()
    model.summary()
    print(f"summary of the bounded model: {(time.perf_counter() - t) * 1000:.1f} ms")


if __name__ == "__main__":
    print(f"machine: {os.cpu_count()} cores; {sys.version.split()[0]}")
    asyncio.run(first_frame())
    asyncio.run(stream(1000, 10))
    for rate in (10_000, 25_000, 50_000):  # where do redraws pass 100 ms?
        asyncio.run(stream(rate, 6))
    asyncio.run(stream(None, 5))
    if "--steps-10m" in sys.argv:
        memory()
