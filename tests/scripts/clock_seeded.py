"""A script that seeds itself from the clock (torch.seed()): every run draws other weights."""

import torch
from torch import nn

torch.seed()
model = nn.Linear(32, 10)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
x, y = torch.randn(256, 32), torch.randint(0, 10, (256,))
for _ in range(1000):
    opt.zero_grad()
    nn.functional.cross_entropy(model(x), y).backward()
    opt.step()
