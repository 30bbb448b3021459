"""Gradient accumulation: backward on every micro-batch, an optimizer step every --accum."""

import argparse

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

p = argparse.ArgumentParser()
p.add_argument("--epochs", type=int, default=20)
p.add_argument("--accum", type=int, default=4)
args = p.parse_args()
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
data = DataLoader(TensorDataset(torch.randn(1024, 32), torch.randint(0, 10, (1024,))), batch_size=16)
for epoch in range(args.epochs):
    for k, (x, y) in enumerate(data):
        loss = nn.functional.cross_entropy(model(x), y) / args.accum
        loss.backward()
        if (k + 1) % args.accum == 0:
            opt.step()
            opt.zero_grad()
    print(f"epoch {epoch}: loss {loss.item() * args.accum:.4f}", flush=True)
