"""A training loop whose end is slow and busy, like a real script's: a DataLoader with --workers
worker processes, and after the loop (its ``finally``: also when tuimon ends it at --steps) two
helper processes that keep two cores busy for --exit-s seconds, as a final checkpoint or upload
might. --how join: the script waits for them as it exits (multiprocessing joins them after
atexit); --how linger: they outlive the script (still in its process group); --how none: no
slow end. Each helper writes the
time.time() it ended into --done-dir, so a test knows when the machine became quiet again."""

import argparse
import multiprocessing
import os
import subprocess
import sys
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

parser = argparse.ArgumentParser()
parser.add_argument("--epochs", type=int, default=100)
parser.add_argument("--workers", type=int, default=2)
parser.add_argument("--exit-s", type=float, default=2.0, help="busy seconds at the end")
parser.add_argument("--how", choices=("join", "linger", "none"), default="join")
parser.add_argument("--done-dir", default=None)
parser.add_argument("--width", type=int, default=256)
args = parser.parse_args()

BURN = """
import sys, time
end = time.monotonic() + float(sys.argv[1])
while time.monotonic() < end:
    pass
if sys.argv[2] != "-":
    with open(sys.argv[2], "a") as f:
        f.write(f"{time.time()}\\n")
"""


def burn(seconds: float, done: str) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass
    if done != "-":
        with open(done, "a") as f:
            f.write(f"{time.time()}\n")


def slow_end() -> None:
    done = os.path.join(args.done_dir, f"{os.getpid()}.done") if args.done_dir else "-"
    for _ in range(2 if args.how != "none" else 0):
        if args.how == "join":  # non-daemon: joined at the interpreter's exit
            multiprocessing.Process(target=burn, args=(args.exit_s, done)).start()
        else:  # not waited for: outlives the script
            subprocess.Popen([sys.executable, "-c", BURN, str(args.exit_s), done])


g = torch.Generator().manual_seed(0)
data = TensorDataset(torch.randn(2048, 64, generator=g), torch.randint(0, 10, (2048,), generator=g))
loader = DataLoader(data, batch_size=64, shuffle=True, num_workers=args.workers)
model = nn.Sequential(nn.Linear(64, args.width), nn.ReLU(), nn.Linear(args.width, args.width),
                      nn.ReLU(), nn.Linear(args.width, 10))
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
try:
    for epoch in range(args.epochs):
        for x, y in loader:
            optimizer.zero_grad()
            nn.functional.cross_entropy(model(x), y).backward()
            optimizer.step()
finally:
    slow_end()
