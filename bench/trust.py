"""Numbers you can trust (run by hand): .venv/bin/python bench/trust.py

1. overhead: tuimon's instrumented loop vs a bare loop of the same step function, at ~1 ms and
   ~10 ms steps, interleaved in one process (blocks of steps, alternating);
2. timing fidelity: tuimon's median step of tiny_mlp vs torch.utils.benchmark.Timer on the
   same step function, same process;
3. start-up: `tuimon --help` wall time.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from tuimon.recipe import Config, Recipe, load_module  # noqa: E402
from tuimon.runner import loop  # noqa: E402
from tuimon.runner.compile_watch import CompileWatch  # noqa: E402
from tuimon.runner.emitter import Emitter  # noqa: E402


def spin_recipe(ms: float) -> Recipe:
    """A step that spins for ``ms`` on the CPU: the harness's cost is then all that varies."""
    w = torch.nn.Linear(1, 1)

    def forward_loss(model, x, y):
        end = time.perf_counter() + ms / 1000.0
        while time.perf_counter() < end:
            pass
        return (model(x) * 0).sum()

    batch = (torch.zeros(1, 1), torch.zeros(1))
    return Recipe(w, torch.optim.SGD(w.parameters(), lr=0.0), None, [batch], forward_loss=forward_loss)


def trainer_for(recipe: Recipe, steps: int) -> loop.Trainer:
    return loop.Trainer(recipe, "cpu", loop.LoopSettings("eager", "fp32", steps, None, 1))


def instrumented(recipe: Recipe, steps: int, fd: int) -> float:
    t = time.perf_counter()
    loop.run(trainer_for(recipe, steps), Emitter(fd, "bench"), CompileWatch())
    return time.perf_counter() - t


def bare(recipe: Recipe, steps: int) -> float:
    trainer, batches = trainer_for(recipe, steps), recipe.batches
    t = time.perf_counter()
    for _ in range(steps):
        trainer.step(batches[0])
    return time.perf_counter() - t


def overhead(ms: float, steps: int, rounds: int) -> None:
    recipe = spin_recipe(ms)
    with open(os.devnull, "wb") as sink:
        a, b = [], []
        for _ in range(rounds):
            a.append(bare(recipe, steps) / steps * 1000)
            b.append(instrumented(recipe, steps, sink.fileno()) / steps * 1000)
    bm, im = statistics.median(a), statistics.median(b)
    print(f"~{ms:g} ms steps: bare {bm:.4f} ms, instrumented {im:.4f} ms per step -> overhead "
          f"{(im - bm) * 1000:+.1f} µs ({(im / bm - 1) * 100:+.2f} %), medians of {rounds} "
          f"interleaved blocks of {steps} steps")


def fidelity(steps: int = 3000) -> None:
    from torch.utils.benchmark import Timer

    module = load_module(ROOT / "recipes/tiny_mlp.py")
    torch.manual_seed(0)
    recipe = module.build(Config(device="cpu", batch_size=32, image_size=0))
    with tempfile.TemporaryFile() as f:
        loop.run(trainer_for(recipe, steps), Emitter(f.fileno(), "bench"), CompileWatch())
        f.seek(0)
        ms = [e["ms"] for e in map(json.loads, f.read().decode().splitlines())
              if e["type"] == "step" and e["i"] >= 100]
    ours = statistics.median(ms)
    trainer, batch = trainer_for(recipe, 1), recipe.batches[0]
    theirs = Timer("trainer.step(batch)", globals={"trainer": trainer, "batch": batch}
                   ).blocked_autorange(min_run_time=3).median * 1000
    print(f"tiny_mlp step: tuimon median {ours:.4f} ms, torch.utils.benchmark.Timer {theirs:.4f} ms "
          f"-> {(ours / theirs - 1) * 100:+.1f} %")


def help_time(rounds: int = 5) -> None:
    times = []
    for _ in range(rounds):
        t = time.perf_counter()
        subprocess.run([str(ROOT / ".venv/bin/tuimon"), "--help"], capture_output=True, check=True)
        times.append(time.perf_counter() - t)
    print(f"tuimon --help: median {statistics.median(times) * 1000:.0f} ms of {rounds}")


if __name__ == "__main__":
    torch.set_num_threads(1)
    print(f"machine: {os.cpu_count()} cores, torch {torch.__version__}, 1 torch thread")
    overhead(1.0, 500, 15)
    overhead(10.0, 100, 9)
    fidelity()
    help_time()
