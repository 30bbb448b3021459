"""An evaluation / benchmark script, not training: a model in eval mode, forward passes under
torch.no_grad() over batches for --seconds, throughput printed as it goes; no optimizer and no
backward anywhere."""

import argparse
import time

import torch
from torch import nn

parser = argparse.ArgumentParser()
parser.add_argument("--seconds", type=float, default=5.0)
parser.add_argument("--batch-size", type=int, default=64)
parser.add_argument("--seed", type=int, default=0)
args = parser.parse_args()

torch.manual_seed(args.seed)
model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10))
model.eval()
batches = [torch.randn(args.batch_size, 32) for _ in range(16)]

seen, confidence = 0, 0.0
start = last = time.perf_counter()
with torch.no_grad():
    while time.perf_counter() - start < args.seconds:
        for x in batches:
            probs = model(x).softmax(dim=1)
            confidence += probs.max(dim=1).values.sum().item()
            seen += len(x)
        now = time.perf_counter()
        if now - last >= 1.0:
            print(f"{seen} samples, {seen / (now - start):.0f} samples/s", flush=True)
            last = now
elapsed = time.perf_counter() - start
print(f"done: {seen} samples in {elapsed:.1f}s, {seen / elapsed:.0f} samples/s, "
      f"mean confidence {confidence / seen:.3f}", flush=True)
