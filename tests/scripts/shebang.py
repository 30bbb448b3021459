#!/usr/bin/env python3
"""An executable training script run directly as ``./shebang.py --epochs 2``: a plain loop over
tensor slices, no DataLoader."""

import argparse
import time

import torch
from torch import nn


def get_args():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--epochs", type=int, default=400)
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--seed", type=int, default=1234)
    return parser.parse_args()


def main():
    args = get_args()
    torch.manual_seed(args.seed)
    x = torch.randn(1024, 32)
    y = (x[:, :10] - x[:, 10:20]).argmax(1)
    model = nn.Sequential(nn.Linear(32, 64), nn.Tanh(), nn.Linear(64, 10))
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    for epoch in range(args.epochs):
        t0 = time.time()
        total = 0.0
        for k in range(0, len(x), args.batch_size):
            xb, yb = x[k:k + args.batch_size], y[k:k + args.batch_size]
            optimizer.zero_grad()
            loss = nn.functional.cross_entropy(model(xb), yb)
            loss.backward()
            optimizer.step()
            total += loss.item()
        steps = (len(x) + args.batch_size - 1) // args.batch_size
        print(f"epoch {epoch}: loss {total / steps:.4f} ({time.time() - t0:.2f}s)", flush=True)


if __name__ == "__main__":
    main()
