"""Numbers you can trust (run by hand): .venv/bin/python bench/trust.py [--runs N]

1. overhead: tuimon's instrumented loop vs a bare loop of the same step function, at ~1 ms and
   ~10 ms steps, interleaved in one process (blocks of steps, alternating). The loop is set up
   as ``python -m tuimon.runner`` sets it up: events to /dev/null, a control pipe read at step
   boundaries (nothing sent), an idle profiler. Reported in µs per step and in % of the step;
   ``--runs`` such runs (default 3), the 1 ms and 10 ms measurements alternating, and their
   median. bench/hot_path.py measures the same per-step work without a step around it.
   ``--device cuda``: the step is a GPU kernel that spins for the step's time
   (``torch.cuda._sleep``, calibrated first) around a tiny Linear, so the step is GPU-bound as a
   real one is; both loops end with a synchronize. tuimon's host-side work then hides behind
   the GPU's, and any sync it added would show as overhead (the GPU programme, issue 27);
2. timing fidelity: tuimon's median step of tiny_mlp vs torch.utils.benchmark.Timer on the
   same step function, same process;
3. start-up: `tuimon --help` wall time (the ``tuimon`` script next to this interpreter, or
   ``python -m tuimon`` where there is none).

Set PYTHONPATH to another checkout to measure its tuimon with this script (e.g. before / after).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.append(str(ROOT))  # appended: a PYTHONPATH tuimon (another checkout) wins

import torch  # noqa: E402
from runner_api import control_lines, train  # noqa: E402
from runner_api import trainer as runner_trainer  # noqa: E402

from tuimon.recipe import Config, Recipe, load_module  # noqa: E402
from tuimon.runner.emitter import Emitter  # noqa: E402
from tuimon.runner.profiling import Profiler  # noqa: E402


def cycles_per_ms() -> float:
    """How many cycles ``torch.cuda._sleep`` spins in a millisecond on this GPU."""
    torch.cuda._sleep(1_000_000)  # the context and the kernel, loaded
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    torch.cuda._sleep(50_000_000)
    end.record()
    end.synchronize()
    return 50_000_000 / start.elapsed_time(end)


def spin_recipe(ms: float, device: str = "cpu", per_ms: float = 0.0) -> Recipe:
    """A step that spins for ``ms`` (on the CPU, or in a GPU kernel): the harness's cost is then
    all that varies."""
    w = torch.nn.Linear(1, 1).to(device)
    cycles = int(ms * per_ms)

    def forward_loss(model, x, y):
        if device == "cuda":
            torch.cuda._sleep(cycles)  # queued: the host goes on, as with a real GPU step
        else:
            end = time.perf_counter() + ms / 1000.0
            while time.perf_counter() < end:
                pass
        return (model(x) * 0).sum()

    batch = (torch.zeros(1, 1, device=device), torch.zeros(1, device=device))
    return Recipe(w, torch.optim.SGD(w.parameters(), lr=0.0), None, [batch], forward_loss=forward_loss)


def trainer_for(recipe: Recipe, steps: int, device: str = "cpu"):
    return runner_trainer(recipe, device, steps)


def sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


COUNTS = True  # the FLOP count before the first step, as the runner's (--no-flops: none)


def instrumented(recipe: Recipe, steps: int, fd: int, device: str = "cpu") -> float:
    """Seconds for ``steps`` steps of the runner's loop, set up as the runner sets it up; the
    FLOP count before the first step (issue 35) as the runner counts it, its own seconds left out:
    the steps' time is what is compared."""
    trainer = trainer_for(recipe, steps, device)
    read_fd, write_fd = os.pipe()  # the parent's control line, kept open, nothing sent
    try:
        profiler = Profiler(device_type=device, model=recipe.model, compiled=False, run="bench")
        sync(device)
        t = time.perf_counter()
        counted = train(trainer, Emitter(fd, "bench"), steps, control=control_lines(read_fd),
                        profiler=profiler, count_flops=COUNTS)
        sync(device)
        return time.perf_counter() - t - counted
    finally:
        os.close(write_fd)
        os.close(read_fd)


def bare(recipe: Recipe, steps: int, device: str = "cpu") -> float:
    trainer, batches = trainer_for(recipe, steps, device), recipe.batches
    sync(device)
    t = time.perf_counter()
    for _ in range(steps):
        trainer.plain_step(batches[0])  # without the phases' marks: those are tuimon's
    sync(device)
    return time.perf_counter() - t


def overhead(ms: float, steps: int, rounds: int, device: str = "cpu",
             per_ms: float = 0.0) -> tuple[float, float]:
    """One run: (µs per step, % of the bare step), from the medians of ``rounds`` blocks each."""
    recipe = spin_recipe(ms, device, per_ms)
    with open(os.devnull, "wb") as sink:
        a, b = [], []
        for _ in range(rounds):
            a.append(bare(recipe, steps, device) / steps * 1000)
            b.append(instrumented(recipe, steps, sink.fileno(), device) / steps * 1000)
    bm, im = statistics.median(a), statistics.median(b)
    us, pct = (im - bm) * 1000, (im / bm - 1) * 100
    print(f"  ~{ms:g} ms steps: bare {bm:.4f} ms, instrumented {im:.4f} ms per step -> overhead "
          f"{us:+.1f} µs ({pct:+.2f} %), medians of {rounds} interleaved blocks of {steps} steps")
    return us, pct


BLOCKS = {1.0: (500, 15), 10.0: (100, 9)}  # step length (ms) -> (steps a block, blocks a run)


def overheads(runs: int, device: str = "cpu", lengths: tuple[float, ...] = (1.0, 10.0),
              blocks: int | None = None) -> dict:
    """``runs`` runs of each step length, alternating; the median run of each. ``blocks``: fewer
    blocks a run than the default (a dry run's plumbing check, not a measurement)."""
    per_ms = cycles_per_ms() if device == "cuda" else 0.0
    got: dict[float, list[tuple[float, float]]] = {ms: [] for ms in lengths}
    for r in range(runs):
        print(f"run {r + 1} of {runs}:")
        for ms in lengths:
            steps, rounds = BLOCKS[ms]
            got[ms].append(overhead(ms, steps, blocks or rounds, device, per_ms))
    out = {}
    for ms, results in got.items():
        us = statistics.median(u for u, _ in results)
        pct = statistics.median(p for _, p in results)
        print(f"overhead at ~{ms:g} ms steps: median of {runs} runs {us:+.1f} µs/step, {pct:+.2f} % "
              f"(runs: {', '.join(f'{p:+.2f} %' for _, p in results)})")
        out[f"{ms:g}ms"] = {"us": round(us, 2), "pct": round(pct, 3),
                            "runs_pct": [round(p, 3) for _, p in results]}
    return out


def fidelity(steps: int = 3000, device: str = "cpu") -> None:
    from torch.utils.benchmark import Timer

    module = load_module(ROOT / "recipes/tiny_mlp.py")
    torch.manual_seed(0)
    recipe = module.build(Config(device=device, batch_size=32, image_size=0))
    with tempfile.TemporaryFile() as f:
        train(trainer_for(recipe, steps, device), Emitter(f.fileno(), "bench"), steps)
        f.seek(0)
        ms = [e["ms"] for e in map(json.loads, f.read().decode().splitlines())
              if e["type"] == "step" and e["i"] >= 100]
    ours = statistics.median(ms)
    trainer, batch = trainer_for(recipe, 1, device), recipe.batches[0]
    theirs = Timer("trainer.plain_step(batch)", globals={"trainer": trainer, "batch": batch}
                   ).blocked_autorange(min_run_time=3).median * 1000
    print(f"tiny_mlp step: tuimon median {ours:.4f} ms, torch.utils.benchmark.Timer {theirs:.4f} ms "
          f"-> {(ours / theirs - 1) * 100:+.1f} %")


def tuimon_command() -> list[str]:
    """The ``tuimon`` script installed next to this interpreter (a venv's bin/), else
    ``python -m tuimon`` (the script's start-up then includes runpy's, a few ms)."""
    script = Path(sys.executable).parent / "tuimon"
    return [str(script)] if script.exists() else [sys.executable, "-m", "tuimon"]


def help_time(rounds: int = 5) -> None:
    cmd, times = tuimon_command(), []
    for _ in range(rounds):
        t = time.perf_counter()
        subprocess.run([*cmd, "--help"], capture_output=True, check=True)
        times.append(time.perf_counter() - t)
    print(f"{' '.join(cmd)} --help: median {statistics.median(times) * 1000:.0f} ms of {rounds}")


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--runs", type=int, default=3, help="overhead runs (median reported; default 3)")
    p.add_argument("--overhead-only", action="store_true", help="skip fidelity and start-up")
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                   help="cuda: GPU-bound steps (a spinning kernel), fidelity on the GPU too")
    p.add_argument("--json", help="also write the overheads here, as JSON")
    p.add_argument("--ms", choices=("1", "10", "1,10"), default="1,10",
                   help="the step lengths measured, ms (default: both)")
    p.add_argument("--blocks", type=int, help="interleaved blocks a run (default 15 at 1 ms, 9 at 10 ms)")
    p.add_argument("--no-flops", action="store_true",
                   help="the loop without its FLOP count before the first step (as `tuimon --no-flops`)")
    a = p.parse_args()
    if a.no_flops:
        COUNTS = False
    if a.device == "cuda" and not torch.cuda.is_available():
        sys.exit("trust.py: --device cuda asked for, but torch sees no CUDA device")
    torch.set_num_threads(1)
    import tuimon

    gpu = torch.cuda.get_device_name() if a.device == "cuda" else None
    print(f"machine: {os.cpu_count()} cores, torch {torch.__version__}, 1 torch thread; tuimon "
          f"from {Path(tuimon.__file__).parent.parent}{'; ' + gpu if gpu else ''}"
          f"{'; FLOP count before the first step' if COUNTS else ''}")
    result = {"device": a.device, "gpu": gpu, "torch": torch.__version__,
              "overhead": overheads(a.runs, a.device, tuple(float(ms) for ms in a.ms.split(",")), a.blocks)}
    if a.json:
        Path(a.json).write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    if not a.overhead_only:
        fidelity(device=a.device)
        help_time()
