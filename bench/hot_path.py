"""tuimon's own per-step work, alone (run by hand; issue 18):

    PYTHONPATH=. .venv/bin/python bench/hot_path.py [--steps N] [--rounds R] [--device D] [--profile]

The runner's loop (runner/recipe_loop.py, on the step engine) drives a step that does nothing
(its forward returns a preallocated loss tensor, its backward and optimizer do nothing; the step
still marks where each part ends, for the step's phases), set up as ``python -m tuimon.runner``
sets it up: events written to /dev/null by the runner's Emitter, a control pipe polled at every
step boundary (its write end held open, nothing sent), an idle profiler, a compile watch. A bare
loop calls the same no-op step (and detaches the loss, as the trainer's step does). Blocks of
steps alternate; the difference per step is what tuimon costs around a step: the clocks, the
batch hand-over, the phases' marks, the loss capture, the bookkeeping, the control poll, the
flush checks, and the building and encoding of the step events (paid at each flush, counted here
per step).

Prints the median over the rounds of (instrumented - bare) per step, in µs. ``--phases``: the
step's phases alone, the loop splitting each step against the same loop with a step that marks
nothing (it then splits none and sends no ``ph``), interleaved in one process. ``--profile`` runs
one block under cProfile and prints where the time goes instead. ``--device cuda``: the batch and
the loss live on the GPU, so the loop's CUDA path runs (timing events recorded each step and read
lazily, the loss copied asynchronously into the pinned ring); the no-op step launches nothing.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.append(str(ROOT))  # appended: a PYTHONPATH tuimon (another checkout) wins

import torch  # noqa: E402
from runner_api import control_lines, train  # noqa: E402
from runner_api import trainer as runner_trainer  # noqa: E402

from tuimon.recipe import Recipe  # noqa: E402
from tuimon.runner.emitter import Emitter  # noqa: E402
from tuimon.runner.profiling import Profiler  # noqa: E402

DEVICE = "cpu"
LOSS = torch.zeros(())


def recipe() -> Recipe:
    model = torch.nn.Linear(1, 1).to(DEVICE)
    batch = (torch.zeros(4, 1, device=DEVICE), torch.zeros(4, device=DEVICE))
    return Recipe(model, torch.optim.SGD(model.parameters(), lr=0.0), None, [batch])


def no_op_step(batch):
    return LOSS


def bare_step(batch):
    """The bare loop's step: what Trainer.step does around its parts that is not tuimon's (it
    hands back the loss detached)."""
    return no_op_step(batch).detach()


def trainer(r: Recipe, steps: int):
    """The runner's step (``Trainer.step``: its parts, each end marked for the step's phases)
    with parts that do nothing: the recipe's work is nothing, what is left is tuimon's."""
    t = runner_trainer(r, DEVICE, steps)
    t.forward = no_op_step
    t.backward = lambda loss: None
    t.optimize = lambda: None
    return t


def instrumented(r: Recipe, steps: int, sink: int, phases: bool = True) -> float:
    """Seconds for ``steps`` steps of the runner's loop, set up as the runner sets it up;
    ``phases`` False: the step marks nothing (the bare loop's step), so the loop splits none."""
    read_fd, write_fd = os.pipe()
    try:
        control = control_lines(read_fd)
        profiler = Profiler(device_type=DEVICE.split(":")[0], model=r.model, compiled=False, run="bench")
        t = trainer(r, steps)
        if not phases:
            t.step = bare_step
        start = time.perf_counter()
        train(t, Emitter(sink, "bench"), steps, control=control, profiler=profiler)
        return time.perf_counter() - start
    finally:
        os.close(write_fd)
        os.close(read_fd)


def bare(r: Recipe, steps: int) -> float:
    t = time.perf_counter()
    batch = r.batches[0]
    for _ in range(steps):
        bare_step(batch)
    return time.perf_counter() - t


def measure(steps: int, rounds: int, phases_only: bool = False) -> list[float]:
    """(instrumented - bare) per step, µs; ``phases_only``: (the loop splitting each step - the
    same loop with a step that marks nothing), the phases' own cost."""
    r = recipe()
    out = []
    with open(os.devnull, "wb") as sink:
        instrumented(r, 1000, sink.fileno())  # warm up imports and caches
        instrumented(r, 1000, sink.fileno(), phases=False)
        for _ in range(rounds):
            b = instrumented(r, steps, sink.fileno(), phases=False) if phases_only else bare(r, steps)
            i = instrumented(r, steps, sink.fileno())
            out.append((i - b) / steps * 1e6)
    return out


def profile(steps: int) -> None:
    import cProfile
    import pstats

    r = recipe()
    with open(os.devnull, "wb") as sink:
        instrumented(r, 1000, sink.fileno())
        prof = cProfile.Profile()
        prof.enable()
        instrumented(r, steps, sink.fileno())
        prof.disable()
    pstats.Stats(prof).sort_stats("tottime").print_stats(25)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=20000)
    p.add_argument("--rounds", type=int, default=15)
    p.add_argument("--device", default="cpu")
    p.add_argument("--profile", action="store_true")
    p.add_argument("--phases", action="store_true",
                   help="the step's phases alone: the loop with a step that marks its parts against "
                   "the same loop with one that marks nothing")
    a = p.parse_args()
    torch.set_num_threads(1)
    global DEVICE, LOSS
    DEVICE, LOSS = a.device, torch.zeros((), device=a.device)
    if a.profile:
        profile(a.steps)
        return
    us = measure(a.steps, a.rounds, a.phases)
    import tuimon

    load = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    print(f"tuimon {Path(tuimon.__file__).parent.parent}, torch {torch.__version__}, "
          f"{os.cpu_count()} cores, device {DEVICE}, load {load}")
    what = "the step's phases" if a.phases else "tuimon's own work"
    print(f"{what}: median {statistics.median(us):.2f} µs/step (min {min(us):.2f}, "
          f"max {max(us):.2f}) over {a.rounds} interleaved blocks of {a.steps} no-op steps")


if __name__ == "__main__":
    main()
