"""Bound by its input pipeline: a Dataset that takes its time per item, read in the main process."""

import argparse
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset


class Slow(Dataset):
    def __init__(self, n, item_ms):
        self.n, self.item_s = n, item_ms / 1000.0

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        time.sleep(self.item_s)
        return torch.randn(32), i % 10


p = argparse.ArgumentParser()
p.add_argument("--epochs", type=int, default=5)
p.add_argument("--item-ms", type=float, default=0.3)
args = p.parse_args()
model = nn.Linear(32, 10)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
for epoch in range(args.epochs):
    for x, y in DataLoader(Slow(1024, args.item_ms), batch_size=32, num_workers=0):
        opt.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
