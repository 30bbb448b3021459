"""What tuimon's hooks cost each rank of a torchrun job (run by hand): .venv/bin/python bench/rank_hooks.py

A real job: torch's launcher (``python -m torch.distributed.run --standalone``) starts N ranks
(gloo on the CPU) of a DDP step as scripts write it (a DataLoader batch, forward spinning ~1 ms
or ~10 ms, ``loss.backward()`` with DDP's gradient all-reduce, ``optimizer.step()``). Each rank
installs the hooks of ``tuimon run -- torchrun ...`` as a rank does (its events go over its own
connection to a rank socket this script serves, as the supervisor's does, and are counted
there), then times blocks of steps alternating bare (torch's own functions put back) and hooked,
in step on every rank (a block is a fixed number of steps, and DDP keeps the ranks together).
Reported per rank: the median over blocks of the per-step difference, µs and % of the step,
for ``--runs`` runs and their median. The rank socket drops what it reads (``--hub``: tuimon's
own, which decodes every line on the same cores).

It also counts the collectives each rank runs in 20 bare and 20 hooked steps (torch.profiler's
``gloo:*`` / ``nccl:*`` records): the hooks add none.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.append(str(ROOT))  # appended: a PYTHONPATH tuimon (another checkout) wins

CHANNEL = "TUIMON_BENCH_CHANNEL"
SIZES = ((1.0, 20), (10.0, 4))  # (forward spin ms, steps a block): short blocks, many pairs


# ---- the launcher -----------------------------------------------------------------------------
class Drain:
    """A rank socket that reads and drops what the ranks send, counting their lines (the
    supervisor's decoding and recording of events is the parent's cost, measured apart:
    bench/ui_ingest.py); ``--hub`` uses tuimon's own rank socket instead."""

    def __init__(self) -> None:
        import socket

        self.dir = tempfile.mkdtemp(prefix="tuimon-bench-")
        self.path = os.path.join(self.dir, "ranks.sock")
        self.lines = 0
        self._server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._server.bind(self.path)
        self._server.listen(64)
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            conn, _ = self._server.accept()
            threading.Thread(target=self._drain, args=(conn,), daemon=True).start()

    def _drain(self, conn) -> None:
        while data := conn.recv(1 << 16):
            self.lines += data.count(b"\n")

    def token(self, run: str) -> str:
        return "bench"

    def close(self) -> None:
        self._server.close()


def launch(args: argparse.Namespace) -> None:
    counts: dict[int, int] = {}
    lock = threading.Lock()

    def deliver(kind, run, rank, *rest):
        if kind == "events":
            with lock:
                counts[rank] = counts.get(rank, 0) + sum(e["type"] == "step" for e in rest[0])

    if args.hub:
        from tuimon.control.rank_hub import RankHub

        hub = RankHub(deliver)
    else:
        hub = Drain()
    out = Path(tempfile.mkdtemp(prefix="tuimon-bench-"))
    env = {**os.environ, CHANNEL: json.dumps({"path": hub.path, "token": hub.token("bench"),
                                              "out": str(out), "runs": args.runs,
                                              "blocks": args.blocks})}
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node",
           str(args.nproc), __file__, "--rank"]
    started = time.monotonic()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    hub.close()
    if proc.returncode != 0:
        sys.exit(f"the job failed:\n{proc.stderr[-3000:]}")
    results = [json.loads(p.read_text()) for p in sorted(out.glob("rank*.json"))]
    import torch

    print(f"torch {torch.__version__}, {os.cpu_count()} cores, {args.nproc} ranks (gloo), "
          f"{args.blocks} pairs of blocks a run, {args.runs} runs; {time.monotonic() - started:.0f} s")
    for ms, _ in SIZES:
        for res in results:
            medians = res["medians"][str(ms)]
            mid = statistics.median(medians)
            runs = ", ".join(f"{m:+.1f}" for m in medians)
            print(f"rank {res['rank']}, ~{ms:g} ms steps: hooks add {mid:+.1f} µs/step "
                  f"({mid / (ms * 10):+.2f} %), runs: {runs} µs")
    for res in results:
        print(f"rank {res['rank']}: collectives in 20 steps: bare {res['collectives']['bare']}, "
              f"hooked {res['collectives']['hooked']}")
    received = sum(counts.values()) if args.hub else hub.lines
    print(f"event lines received from the ranks: {received} ({'tuimon' if args.hub else 'a draining'} "
          "rank socket)")


# ---- a rank -----------------------------------------------------------------------------------
def rank_main() -> None:
    import torch
    import torch.distributed as dist
    from script_hooks import found, hook_settings, patched_names, put, timed_steps  # bench/
    from torch.nn.parallel import DistributedDataParallel
    from torch.utils.data import DataLoader, TensorDataset

    cfg = json.loads(os.environ[CHANNEL])
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    bare = patched_names()
    from tuimon.runner.script import hooks

    hooks.start(hook_settings(run="bench", mode="eager", precision="script", seed=None,
                              launcher="torchrun", role="rank", channel=cfg["path"],
                              token=cfg["token"], no_step_s=1e9))
    hooked = patched_names()
    model = DistributedDataParallel(torch.nn.Linear(64, 8))
    opt = torch.optim.SGD(model.parameters(), lr=0.0)

    def block(ms: float, steps: int) -> float:
        data = TensorDataset(torch.zeros(steps * 4, 64), torch.zeros(steps * 4, 8))
        return timed_steps(DataLoader(data, batch_size=4), model, opt, ms)

    medians = {}
    for ms, steps in SIZES:
        put(hooked)
        block(ms, steps)  # warm up both paths once
        found(bare, hooked, model)
        put(bare)
        block(ms, steps)
        runs = []
        for _ in range(cfg["runs"]):
            diffs = []
            for _ in range(cfg["blocks"]):
                put(bare)
                a = block(ms, steps)
                put(hooked)
                b = block(ms, steps)
                diffs.append(b - a)
            runs.append(statistics.median(diffs))
        medians[str(ms)] = runs
    collectives = {}
    for name, names in (("bare", bare), ("hooked", hooked)):
        put(names)
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
            block(0.0, 20)
        collectives[name] = sum(e.count for e in prof.key_averages()
                                if e.key.startswith(("gloo:", "nccl:", "c10d::")))
    put(hooked)
    Path(cfg["out"], f"rank{rank}.json").write_text(json.dumps(
        {"rank": rank, "medians": medians, "collectives": collectives}))
    dist.destroy_process_group()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--blocks", type=int, default=61)
    p.add_argument("--nproc", type=int, default=2)
    p.add_argument("--hub", action="store_true",
                   help="the ranks' events to tuimon's own rank socket (decoded there) rather than "
                   "one that drops them")
    p.add_argument("--rank", action="store_true", help=argparse.SUPPRESS)  # torchrun's workers
    args = p.parse_args()
    if args.rank:
        rank_main()
    else:
        launch(args)


if __name__ == "__main__":
    main()
