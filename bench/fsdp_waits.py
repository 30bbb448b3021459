"""tuimon's time in FSDP2's collectives against torch.profiler's own FSDP ranges (run by hand):

    .venv/bin/python -m torch.distributed.run --standalone --nproc-per-node 2 bench/fsdp_waits.py

Each rank runs tests/scripts/fsdp_train.py's model (fully_shard per block, AdamW, synthetic
tokens; gloo on the CPU) for --steps steps, with tuimon's component (runner/fsdp_waits.py)
timing the all-gathers (FSDPParamGroup.unshard + wait_for_unshard) and reduce-scatters
(foreach_reduce), and torch.profiler recording the same steps past --warmup. FSDP marks its own
work with record_function: "FSDP::all_gather" (the all-gather's copy-in and issue, inside
unshard) plus "FSDP::all_gather_copy_out" (its wait and copy-out, inside wait_for_unshard), and
"FSDP::post_backward_reduce" (the reduce-scatter, with the post-backward's bookkeeping around
it). Each rank prints both, ms a step: they should agree within the bookkeeping's few percent."""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import time
from pathlib import Path

import torch
import torch.distributed as dist
from torch.distributed.fsdp import fully_shard

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tuimon.runner.fsdp_waits import FsdpWaits, fsdp_group_module  # noqa: E402

SCRIPT = Path(__file__).resolve().parents[1] / "tests" / "scripts" / "fsdp_train.py"
ALL_GATHER = ("FSDP::all_gather", "FSDP::all_gather_copy_out")
REDUCE = ("FSDP::post_backward_reduce",)


class Engine:  # what the component needs of the step engine: the step count, an emitter
    def __init__(self) -> None:
        self.i, self.emitter, self.said = 0, self, []

    def emit(self, kind, **fields):
        self.said.append(fields)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--warmup", type=int, default=16)  # the component's first window: 0..16
    p.add_argument("--layers", type=int, default=4)
    a = p.parse_args()
    spec = importlib.util.spec_from_file_location("fsdp_train", SCRIPT)
    train = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(train)
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = train.Transformer(128, 64, 4, a.layers)
    for block in model.layers:
        fully_shard(block)
    fully_shard(model)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(rank)
    engine, waits = Engine(), FsdpWaits(fsdp_group_module(), torch.compiler.is_compiling)
    waits.start(engine)
    prof = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU])
    times = []
    for engine.i in range(a.steps):
        t0 = time.perf_counter()
        if engine.i == waits.due:
            waits.boundary(engine, engine.i)
        if engine.i == a.warmup:
            prof.start()
        tokens = torch.randint(0, 128, (8, 33), generator=g)
        loss = torch.nn.functional.cross_entropy(model(tokens[:, :-1]).flatten(0, 1),
                                                 tokens[:, 1:].flatten())
        loss.backward()
        opt.step()
        opt.zero_grad()
        times.append(1000 * (time.perf_counter() - t0))
    prof.stop()
    engine.i = a.steps
    waits.end(engine)
    kept = [w for w in engine.said if w["steps"][0] >= a.warmup]
    steps = sum(w["steps"][1] - w["steps"][0] for w in kept)
    ours = {k: 1000 * sum(w["seconds"][k] for w in kept) / steps for k in ("all_gather", "reduce_scatter")}
    totals: dict[str, float] = {}
    for ev in prof.events():
        name = ev.name.split(" (")[0]  # FSDP names its ranges with the module's path
        totals[name] = totals.get(name, 0.0) + ev.cpu_time_total / 1000.0
    theirs = {"all_gather": sum(totals.get(n, 0.0) for n in ALL_GATHER) / steps,
              "reduce_scatter": sum(totals.get(n, 0.0) for n in REDUCE) / steps}
    print(f"rank {rank} over {steps} steps (median step {statistics.median(times[a.warmup:]):.1f} ms, "
          f"profiled), ms a step: all-gather tuimon {ours['all_gather']:.2f} "
          f"profiler {theirs['all_gather']:.2f} · reduce-scatter tuimon {ours['reduce_scatter']:.2f} "
          f"profiler {theirs['reduce_scatter']:.2f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
