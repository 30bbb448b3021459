"""A hand-written optimizer that is not a torch.optim.Optimizer."""

import argparse

import torch
from torch import nn


class ManualSGD:
    def __init__(self, params, lr):
        self.params, self.lr = list(params), lr

    def step(self):
        with torch.no_grad():
            for p in self.params:
                p -= self.lr * p.grad

    def zero_grad(self):
        for p in self.params:
            p.grad = None


p = argparse.ArgumentParser()
p.add_argument("--epochs", type=int, default=20)
args = p.parse_args()
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 10))
opt = ManualSGD(model.parameters(), lr=0.05)
x, y = torch.randn(1024, 32), torch.randint(0, 10, (1024,))
for epoch in range(args.epochs):
    for k in range(0, 1024, 32):
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x[k:k + 32]), y[k:k + 32])
        loss.backward()
        opt.step()
    print(f"epoch {epoch}: loss {loss.item():.4f}", flush=True)
