"""What the probes cost: time per sample for 1, 4 and 8 runs, and step time with probes off,
at 1 s and at 0.2 s. Run by hand: .venv/bin/python bench/probe_cost.py; results go in RESULTS.md.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests import fake_pynvml as fake  # noqa: E402
from tuimon.probes import GpuProbe, HostProbe  # noqa: E402
from tuimon.report import schema  # noqa: E402

# A stand-in for a runner: a sleeping process with two children, like compile workers.
RUN = ("import subprocess, sys, time\n"
       "kids = [subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']) for _ in range(2)]\n"
       "time.sleep(60)\n")


def per_sample_ms(fn, n: int = 100) -> float:
    fn()
    times = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times)


def sample_cost() -> None:
    print("## time per sample (median of 100)")
    procs = [subprocess.Popen([sys.executable, "-c", RUN]) for _ in range(8)]
    time.sleep(1.5)
    try:
        for n in (1, 4, 8):
            pids = {f"run{i}": p.pid for i, p in enumerate(procs[:n])}
            host = HostProbe()
            host_ms = per_sample_ms(lambda pids=pids, host=host: host.sample(pids))
            gpu = GpuProbe(fake.make([fake.FakeDevice(procs=[(p, 2**30) for p in pids.values()])]))
            trees = {r: [p] for r, p in pids.items()}
            fake_ms = per_sample_ms(lambda gpu=gpu, trees=trees: gpu.sample(trees))
            real = GpuProbe()
            real_ms = per_sample_ms(lambda real=real, trees=trees: real.sample(trees))
            print(f"{n} run(s): host {host_ms:.3f} ms, GPU (fake NVML, 1 device) {fake_ms:.3f} ms, "
                  f"GPU (this machine's NVML: {'available' if real.available else real.reason}) "
                  f"{real_ms:.4f} ms")
    finally:
        for p in procs:
            p.kill()
        subprocess.run(["pkill", "-f", "time.sleep(60)"], check=False)


def step_effect(recipe: str, steps: int, rounds: int = 5) -> None:
    print(f"## step time of {recipe} (eager, {steps} steps), probes off / 1 s / 0.2 s, interleaved")
    configs = {"off": ["--no-probes"], "1 s": ["--interval", "1"], "0.2 s": ["--interval", "0.2"]}
    medians: dict[str, list[float]] = {k: [] for k in configs}
    with tempfile.TemporaryDirectory() as out:
        for _ in range(rounds):
            for name, flags in configs.items():
                cmd = [str(ROOT / ".venv/bin/tuimon"), str(ROOT / "recipes" / recipe), "--modes", "eager",
                       "--steps", str(steps), "--out", out, *flags]
                subprocess.run(cmd, check=True, capture_output=True)
                session = sorted(Path(out).glob("*"))[-1]
                summary = schema.read(session / "summary.json")
                medians[name].append(summary["runs"][0]["timing"]["median_ms"])
    base = statistics.median(medians["off"])
    for name, values in medians.items():
        m = statistics.median(values)
        best, best_off = min(values), min(medians["off"])
        print(f"{name:>6}: median step {m:.4f} ms ({(m / base - 1) * 100:+.1f} % vs off), "
              f"best round {best:.4f} ms ({(best / best_off - 1) * 100:+.1f} %); "
              f"per round {', '.join(f'{v:.4f}' for v in values)}")


if __name__ == "__main__":
    sample_cost()
    step_effect("tiny_mlp.py", 20000)
    step_effect("autoencoder.py", 1000)
