"""What listening to torch's structured trace adds to a compile (run by hand).

Compiles tiny_mlp (cold: a fresh Inductor cache each time; and warm) with and without tuimon's
TraceListener attached, interleaved, in fresh processes; prints the first-step times.
.venv/bin/python bench/compile_listen_cost.py [ROUNDS]
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CHILD = r"""
import sys, time
import torch
sys.path.insert(0, sys.argv[2])
from tuimon.recipe import Config, load_module
if sys.argv[1] == "listen":
    from tuimon.runner.compile_trace import TraceListener
    class Null:
        def emit_now(self, *a, **k): pass
    TraceListener(Null()).install()
module = load_module(sys.argv[3])
torch.manual_seed(0)
r = module.build(Config(device="cpu", batch_size=32, image_size=0))
model = torch.compile(r.model)
x, y = r.batches[0]
t = time.perf_counter()
loss = r.loss_fn(model(x), y); loss.backward(); r.optimizer.step()
print(time.perf_counter() - t)
"""


def first_step(mode: str, cache: str) -> float:
    env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": cache}
    out = subprocess.run([sys.executable, "-c", CHILD, mode, str(ROOT), str(ROOT / "recipes/tiny_mlp.py")],
                         capture_output=True, text=True, env=env, check=True).stdout
    return float(out.strip().splitlines()[-1])


def main(rounds: int) -> None:
    times: dict[str, list[float]] = {k: [] for k in ("cold off", "cold listen", "warm off", "warm listen")}
    with tempfile.TemporaryDirectory() as tmp:
        warm = str(Path(tmp) / "warm")
        first_step("off", warm)  # fill the warm cache
        for i in range(rounds):
            for mode in ("off", "listen"):
                times[f"cold {mode}"].append(first_step(mode, str(Path(tmp) / f"cold-{mode}-{i}")))
                times[f"warm {mode}"].append(first_step(mode, warm))
    for name, values in times.items():
        print(f"{name:>12}: median {statistics.median(values):.3f} s, min {min(values):.3f} s "
              f"({', '.join(f'{v:.3f}' for v in values)})")
    for kind in ("cold", "warm"):
        off, on = statistics.median(times[f"{kind} off"]), statistics.median(times[f"{kind} listen"])
        print(f"{kind}: listening adds {on - off:+.3f} s ({(on / off - 1) * 100:+.1f} %) to the first step")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
