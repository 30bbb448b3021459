"""What the store's once-a-second fsync costs: the fsync itself after a second's worth of events,
and the time per batch of SessionStore.append with and without it. Run by hand:
.venv/bin/python bench/store_sync_cost.py [DIR] (DIR: the disk your sessions go to; default a
temporary directory). Results go in RESULTS.md.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tuimon import events  # noqa: E402
from tuimon.sessiondir.store import SessionStore  # noqa: E402

# A busy session: 4 runs at 1 kHz steps, batched 4x a second by each runner: 16 batches/s of
# 250 step events, plus a sample a second. That is ~470 KB/s of events.
BATCH = [events.make(events.STEP, "eager-fp32", i=i, ms=1.0, data_ms=0.01, n=32, loss=2.3,
                     phase="steady") for i in range(250)]


def run(seconds: float, sync_s: float, where: Path) -> tuple[list[float], int, int]:
    store = SessionStore.create(where, "bench")
    store.sync_s = sync_s
    per_append = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        t0 = time.perf_counter()
        store.append(BATCH)
        store.tick()
        per_append.append((time.perf_counter() - t0) * 1e3)
        time.sleep(1 / 16)
    size = (store.path / "events.jsonl").stat().st_size
    store.close()
    return per_append, store.syncs, size


def main() -> None:
    where = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp(prefix="tuimon-bench-"))
    for label, sync_s in (("no fsync", 1e9), ("fsync <= 1/s", 1.0)):
        times, syncs, size = run(10.0, sync_s, where)
        times.sort()
        print(f"{label:>13}: {len(times)} appends of 250 events ({size / 1e6:.1f} MB in 10 s), "
              f"{syncs} fsyncs; per append median {statistics.median(times):.2f} ms, "
              f"p99 {times[int(len(times) * 0.99)]:.2f} ms, max {times[-1]:.2f} ms, "
              f"total {sum(times):.0f} ms")


if __name__ == "__main__":
    main()
