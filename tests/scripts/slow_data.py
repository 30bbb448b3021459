"""A data-loader-bound job: a Dataset whose __getitem__ takes its time (decoding, disk reads;
here a sleep of --item-ms per item), read in the main process (num_workers=0), so most of each
step is spent waiting for the next batch."""

import argparse
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset


class SlowDataset(Dataset):
    def __init__(self, n, item_ms, dim=32, classes=10):
        self.n, self.delay = n, item_ms / 1000.0
        g = torch.Generator().manual_seed(0)
        self.features = torch.randn(n, dim, generator=g)
        self.labels = torch.randint(0, classes, (n,), generator=g)

    def __len__(self):
        return self.n

    def __getitem__(self, idx):
        time.sleep(self.delay)  # stands in for reading and decoding a file
        return self.features[idx], self.labels[idx]


parser = argparse.ArgumentParser()
parser.add_argument("--epochs", type=int, default=18)
parser.add_argument("--lr", type=float, default=0.01)
parser.add_argument("--batch-size", type=int, default=32)
parser.add_argument("--workers", type=int, default=0)
parser.add_argument("--item-ms", type=float, default=0.3, help="time to load one item, in ms")
args = parser.parse_args()

dataset = SlowDataset(1024, args.item_ms)
loader = DataLoader(dataset, batch_size=args.batch_size, shuffle=True, num_workers=args.workers)
model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 10))
optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
criterion = nn.CrossEntropyLoss()

for epoch in range(args.epochs):
    t0 = time.time()
    total = 0.0
    for inputs, targets in loader:
        optimizer.zero_grad()
        loss = criterion(model(inputs), targets)
        loss.backward()
        optimizer.step()
        total += loss.item()
    elapsed = time.time() - t0
    print(f"epoch {epoch}: loss {total / len(loader):.4f} ({len(dataset) / elapsed:.0f} samples/s)",
          flush=True)
