"""A train.py in the manner of PyTorch's word_language_model example: after each epoch it
evaluates, saves the whole model to ./model.pt when the validation loss improved, and at the end
(also after Ctrl-C: "Exiting from training early") loads ./model.pt back and evaluates the test
set with it."""

import argparse
import os

import torch
from torch import nn


def batches(n, g):
    x = torch.randn(n, 16, generator=g)
    return x, (x @ torch.ones(16, 1)).tanh()


def evaluate(model, data):
    model.eval()
    with torch.no_grad():
        return nn.functional.mse_loss(model(data[0]), data[1]).item()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=1000)
    parser.add_argument("--batches", type=int, default=5, help="batches per epoch")
    parser.add_argument("--save", default="model.pt")
    args = parser.parse_args()

    g = torch.Generator().manual_seed(0)
    train = [batches(32, g) for _ in range(args.batches)]
    valid, test = batches(256, g), batches(256, g)
    model = nn.Sequential(nn.Linear(16, 32), nn.Tanh(), nn.Linear(32, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    best = None
    try:
        for epoch in range(1, args.epochs + 1):
            model.train()
            for x, y in train:
                optimizer.zero_grad()
                nn.functional.mse_loss(model(x), y).backward()
                optimizer.step()
            val_loss = evaluate(model, valid)
            print(f"end of epoch {epoch} valid loss {val_loss:.5f}", flush=True)
            if best is None or val_loss < best:
                with open(args.save, "wb") as f:
                    torch.save({"model": model, "epoch": epoch, "pid": os.getpid()}, f)
                best = val_loss
    except KeyboardInterrupt:
        print("Exiting from training early", flush=True)

    with open(args.save, "rb") as f:
        saved = torch.load(f, weights_only=False)
    whose = "this process" if saved["pid"] == os.getpid() else f"process {saved['pid']}"
    print(f"test loss {evaluate(saved['model'], test):.5f} with the model of epoch "
          f"{saved['epoch']} saved by {whose}", flush=True)


if __name__ == "__main__":
    main()
