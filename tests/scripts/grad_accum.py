"""Gradient accumulation to get a large effective batch from small micro-batches: the loss is
divided by --accum, backward() runs on every micro-batch, and optimizer.step() + zero_grad()
run every --accum micro-batches (and on the last, partial group of an epoch)."""

import argparse
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=100)
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--batch-size", type=int, default=16, help="micro-batch size")
    parser.add_argument("--accum", type=int, default=4, help="micro-batches per optimizer step")
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args()
    print(f"effective batch size {args.batch_size * args.accum}", flush=True)

    torch.manual_seed(args.seed)
    x = torch.randn(4096, 32)
    y = (x @ torch.randn(32, 10)).argmax(1)
    loader = DataLoader(TensorDataset(x, y), batch_size=args.batch_size, shuffle=True, num_workers=0)

    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 10))
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    criterion = nn.CrossEntropyLoss()

    for epoch in range(args.epochs):
        t0 = time.time()
        model.train()
        optimizer.zero_grad()
        epoch_loss = 0.0
        for i, (xb, yb) in enumerate(loader):
            loss = criterion(model(xb), yb) / args.accum
            loss.backward()
            epoch_loss += loss.item()
            if (i + 1) % args.accum == 0 or i + 1 == len(loader):
                optimizer.step()
                optimizer.zero_grad()
        print(f"epoch {epoch}: loss {epoch_loss * args.accum / len(loader):.4f} "
              f"({time.time() - t0:.2f}s)", flush=True)


if __name__ == "__main__":
    main()
