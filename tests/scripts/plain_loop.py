"""A plain train.py: argparse, DataLoader with workers, an epoch loop with a validation pass each
epoch, a checkpoint, and Ctrl-C handled to save one last checkpoint."""

import argparse
import os
import tempfile

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--epochs", type=int, default=20)
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--ckpt", default=os.path.join(tempfile.gettempdir(), "plain_loop.pt"))
    args = p.parse_args()
    torch.manual_seed(args.seed)
    x, y = torch.randn(2048, 32), torch.randint(0, 10, (2048,))
    train = DataLoader(TensorDataset(x[:1792], y[:1792]), batch_size=args.batch_size, shuffle=True,
                       num_workers=args.workers)
    val = DataLoader(TensorDataset(x[1792:], y[1792:]), batch_size=128)
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 10))
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    try:
        for epoch in range(args.epochs):
            model.train()
            for xb, yb in train:
                opt.zero_grad()
                loss = nn.functional.cross_entropy(model(xb), yb)
                loss.backward()
                opt.step()
            model.eval()
            correct = 0
            with torch.no_grad():
                for xb, yb in val:
                    correct += (model(xb).argmax(1) == yb).sum().item()
            print(f"epoch {epoch}: loss {loss.item():.4f} val acc {correct / 256:.3f}", flush=True)
            torch.save(model.state_dict(), args.ckpt)
    except KeyboardInterrupt:
        print("interrupted: saving checkpoint", flush=True)
        torch.save(model.state_dict(), args.ckpt)
    finally:
        print("cleanup done", flush=True)


if __name__ == "__main__":
    main()
