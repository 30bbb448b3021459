"""A hand-rolled optimizer, the way tutorials write SGD from scratch: a plain class with step()
and zero_grad() that is NOT a torch.optim.Optimizer, used in an ordinary loop with
loss.backward()."""

import argparse
import time

import torch
from torch import nn


class ManualSGD:
    """SGD with momentum, by hand."""

    def __init__(self, params, lr=0.01, momentum=0.0):
        self.params = [p for p in params if p.requires_grad]
        self.lr, self.momentum = lr, momentum
        self.velocity = [torch.zeros_like(p) for p in self.params]

    def step(self):
        with torch.no_grad():
            for p, v in zip(self.params, self.velocity, strict=True):
                if p.grad is None:
                    continue
                v.mul_(self.momentum).add_(p.grad)
                p -= self.lr * v

    def zero_grad(self):
        for p in self.params:
            p.grad = None


parser = argparse.ArgumentParser()
parser.add_argument("--epochs", type=int, default=200)
parser.add_argument("--lr", type=float, default=0.01)
parser.add_argument("--momentum", type=float, default=0.9)
parser.add_argument("--batch-size", type=int, default=32)
parser.add_argument("--seed", type=int, default=0)
args = parser.parse_args()

torch.manual_seed(args.seed)
x = torch.randn(8192, 32)
y = (x @ torch.randn(32, 10)).argmax(1)
model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 10))
opt = ManualSGD(model.parameters(), lr=args.lr, momentum=args.momentum)
loss_fn = nn.CrossEntropyLoss()

for epoch in range(args.epochs):
    t0 = time.time()
    perm = torch.randperm(len(x))
    total = 0.0
    for k in range(0, len(x), args.batch_size):
        idx = perm[k:k + args.batch_size]
        opt.zero_grad()
        loss = loss_fn(model(x[idx]), y[idx])
        loss.backward()
        opt.step()
        total += loss.item() * len(idx)
    with torch.no_grad():
        acc = (model(x).argmax(1) == y).float().mean().item()
    print(f"epoch {epoch}: loss {total / len(x):.4f} train acc {acc:.3f} ({time.time() - t0:.2f}s)",
          flush=True)
