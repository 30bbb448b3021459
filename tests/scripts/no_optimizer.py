"""Evaluation only: forward passes under no_grad for --seconds, no optimizer, no backward."""

import argparse
import time

import torch
from torch import nn

p = argparse.ArgumentParser()
p.add_argument("--seconds", type=float, default=5.0)
args = p.parse_args()
model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 10)).eval()
n, end = 0, time.time() + args.seconds
with torch.no_grad():
    while time.time() < end:
        model(torch.randn(64, 32))
        n += 64
print(f"{n / args.seconds:.0f} samples/s", flush=True)
