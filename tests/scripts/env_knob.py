"""A small training loop whose knobs come from outside: its hidden width from the command line
(``--width``) and its batch size from the environment (``BS``), as launch scripts often do."""

import argparse
import os

import torch
from torch import nn


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--width", type=int, default=16)
    parser.add_argument("--steps", type=int, default=1000)
    args = parser.parse_args()
    batch = int(os.environ.get("BS", "8"))
    print(f"knobs: width={args.width} batch={batch}", flush=True)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, args.width), nn.ReLU(), nn.Linear(args.width, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    x = torch.randn(batch, 16)
    y = (x @ torch.randn(16, 4)).argmax(1)
    for _ in range(args.steps):
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()


if __name__ == "__main__":
    main()
