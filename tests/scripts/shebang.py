#!/usr/bin/env python3
"""An executable script run as ./shebang.py, without a DataLoader."""

import argparse

import torch
from torch import nn

p = argparse.ArgumentParser()
p.add_argument("--epochs", type=int, default=20)
args = p.parse_args()
torch.manual_seed(0)
model = nn.Linear(32, 10)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
x, y = torch.randn(1024, 32), torch.randint(0, 10, (1024,))
for epoch in range(args.epochs):
    for k in range(0, 1024, 32):
        opt.zero_grad()
        nn.functional.cross_entropy(model(x[k:k + 32]), y[k:k + 32]).backward()
        opt.step()
