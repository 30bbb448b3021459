"""A plain train.py: argparse, a DataLoader with worker processes, an epoch loop with a
validation pass after each epoch, a checkpoint every epoch, and Ctrl-C caught to save one last
checkpoint before the ``finally:`` cleanup."""

import argparse
import os
import tempfile
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def make_data(n_train, n_val, dim=32, classes=10):
    # A learnable synthetic task: the label is the argmax of a fixed random projection.
    x = torch.randn(n_train + n_val, dim)
    y = (x @ torch.randn(dim, classes)).argmax(1)
    train = TensorDataset(x[:n_train], y[:n_train])
    val = TensorDataset(x[n_train:], y[n_train:])
    return train, val


def evaluate(model, loader):
    model.eval()
    correct = total = 0
    with torch.no_grad():
        for xb, yb in loader:
            correct += (model(xb).argmax(1) == yb).sum().item()
            total += len(yb)
    return correct / total


def save_checkpoint(path, model, opt, epoch):
    torch.save({"epoch": epoch, "model": model.state_dict(), "optimizer": opt.state_dict()}, path)


def main():
    parser = argparse.ArgumentParser(description="Train a small MLP classifier.")
    parser.add_argument("--epochs", type=int, default=60)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--ckpt", default=os.path.join(tempfile.gettempdir(), "plain_loop.pt"))
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    train_ds, val_ds = make_data(1792, 256)
    train_loader = DataLoader(train_ds, batch_size=args.batch_size, shuffle=True,
                              num_workers=args.workers)
    val_loader = DataLoader(val_ds, batch_size=128)

    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 10))
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)

    epoch = 0
    try:
        for epoch in range(args.epochs):
            t0 = time.time()
            model.train()
            running = 0.0
            for xb, yb in train_loader:
                optimizer.zero_grad()
                loss = criterion(model(xb), yb)
                loss.backward()
                optimizer.step()
                running += loss.item()
            acc = evaluate(model, val_loader)
            print(f"epoch {epoch + 1}/{args.epochs}  train loss {running / len(train_loader):.4f}  "
                  f"val acc {acc:.3f}  ({time.time() - t0:.2f}s)", flush=True)
            save_checkpoint(args.ckpt, model, optimizer, epoch)
    except KeyboardInterrupt:
        print("interrupted: saving checkpoint", flush=True)
        save_checkpoint(args.ckpt, model, optimizer, epoch)
    finally:
        print("cleanup done", flush=True)


if __name__ == "__main__":
    main()
