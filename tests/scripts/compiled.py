"""A script that compiles its own model, with the mode it chose."""

import argparse

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

p = argparse.ArgumentParser()
p.add_argument("--epochs", type=int, default=20)
p.add_argument("--compile-mode", default="max-autotune-no-cudagraphs")
args = p.parse_args()
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 10))
model = torch.compile(model, mode=args.compile_mode)
print(f"compiled with mode={args.compile_mode}: {type(model).__name__}", flush=True)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
data = DataLoader(TensorDataset(torch.randn(1024, 32), torch.randint(0, 10, (1024,))), batch_size=32)
for epoch in range(args.epochs):
    for x, y in data:
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
    print(f"epoch {epoch}: loss {loss.item():.4f}", flush=True)
