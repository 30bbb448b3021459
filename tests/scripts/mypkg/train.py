"""The package's entry point (``python -m mypkg.train --config cfg.json``): hyperparameters from
a JSON config, the model from a sibling module through a relative import, a ``main()`` behind
``if __name__ == "__main__"``."""

import argparse
import json
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset, random_split

from .model import build_model


def load_config(path):
    with open(path) as f:
        cfg = json.load(f)
    for key in ("lr", "epochs", "batch_size"):
        if key not in cfg:
            raise SystemExit(f"{path}: missing {key!r}")
    return cfg


def train_one_epoch(model, loader, optimizer, criterion):
    model.train()
    total = 0.0
    for x, y in loader:
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        total += loss.item() * len(y)
    return total / len(loader.dataset)


@torch.no_grad()
def evaluate(model, loader):
    model.eval()
    correct = sum((model(x).argmax(1) == y).sum().item() for x, y in loader)
    return correct / len(loader.dataset)


def main():
    parser = argparse.ArgumentParser(prog="mypkg.train")
    parser.add_argument("--config", required=True, help="JSON file with lr, epochs, batch_size")
    args = parser.parse_args()
    cfg = load_config(args.config)

    if "seed" in cfg:
        torch.manual_seed(cfg["seed"])
    x = torch.randn(2304, 32)
    y = (x @ torch.randn(32, 10)).argmax(1)
    train_set, val_set = random_split(TensorDataset(x, y), [2048, 256])
    train_loader = DataLoader(train_set, batch_size=cfg["batch_size"], shuffle=True)
    val_loader = DataLoader(val_set, batch_size=256)

    model = build_model(cfg)
    optimizer = torch.optim.AdamW(model.parameters(), lr=cfg["lr"], weight_decay=0.01)
    criterion = nn.CrossEntropyLoss()
    for epoch in range(cfg["epochs"]):
        t0 = time.time()
        loss = train_one_epoch(model, train_loader, optimizer, criterion)
        acc = evaluate(model, val_loader)
        print(f"epoch {epoch}: train loss {loss:.4f} val acc {acc:.3f} ({time.time() - t0:.2f}s)",
              flush=True)


if __name__ == "__main__":
    main()
