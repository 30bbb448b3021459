"""A script that trains, then fails on a bad batch deep in a helper."""

import torch
from torch import nn


def check(batch, epoch, step):
    if epoch == 0 and step == 7:
        raise ValueError(f"bad batch at epoch {epoch} step {step}")
    return batch


model = nn.Linear(32, 10)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
for epoch in range(3):
    for step in range(100):
        x = check(torch.randn(32, 32), epoch, step)
        opt.zero_grad()
        model(x).pow(2).mean().backward()
        opt.step()
