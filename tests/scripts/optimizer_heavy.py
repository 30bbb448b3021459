"""An optimizer-bound train.py: a deep stack of narrow layers (many small parameters) trained by
AdamW without foreach (its per-parameter Python loop), batches from a DataLoader."""

import argparse

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

parser = argparse.ArgumentParser()
parser.add_argument("--epochs", type=int, default=100)
parser.add_argument("--layers", type=int, default=48)
parser.add_argument("--seed", type=int, default=0)
args = parser.parse_args()

torch.manual_seed(args.seed)
model = nn.Sequential(*[m for _ in range(args.layers) for m in (nn.Linear(8, 8), nn.Tanh())],
                      nn.Linear(8, 2))
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, foreach=False)
criterion = nn.CrossEntropyLoss()
x = torch.randn(256, 8)
y = torch.randint(0, 2, (256,))
loader = DataLoader(TensorDataset(x, y), batch_size=8, shuffle=True, drop_last=True)

for epoch in range(args.epochs):
    for xb, yb in loader:
        optimizer.zero_grad()
        loss = criterion(model(xb), yb)
        loss.backward()
        optimizer.step()
    print(f"epoch {epoch}: loss {loss.item():.4f}", flush=True)
