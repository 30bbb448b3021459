"""A script that compiles its own model: ``model = torch.compile(model, mode=args.compile_mode)``
with the mode it picked itself (max-autotune without CUDA graphs by default), then an ordinary
training loop over a DataLoader."""

import argparse
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

parser = argparse.ArgumentParser()
parser.add_argument("--epochs", type=int, default=150)
parser.add_argument("--lr", type=float, default=0.05)
parser.add_argument("--batch-size", type=int, default=32)
parser.add_argument("--seed", type=int, default=0)
parser.add_argument("--compile-mode", default="max-autotune-no-cudagraphs",
                    choices=["default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs"])
args = parser.parse_args()

torch.manual_seed(args.seed)
model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 10))
model = torch.compile(model, mode=args.compile_mode)
print(f"compiled with mode={args.compile_mode}: {type(model).__name__}", flush=True)

optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
criterion = nn.CrossEntropyLoss()
x = torch.randn(2048, 32)
y = (x @ torch.randn(32, 10)).argmax(1)
# drop_last: every batch has the same shape, so the compiled graph is reused
loader = DataLoader(TensorDataset(x, y), batch_size=args.batch_size, shuffle=True, drop_last=True,
                    num_workers=0)

for epoch in range(args.epochs):
    t0 = time.time()
    model.train()
    total = 0.0
    for xb, yb in loader:
        optimizer.zero_grad()
        loss = criterion(model(xb), yb)
        loss.backward()
        optimizer.step()
        total += loss.item()
    print(f"epoch {epoch}: loss {total / len(loader):.4f} ({time.time() - t0:.2f}s)", flush=True)
