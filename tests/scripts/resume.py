"""A train.py that resumes from its checkpoint when there is one, as most do: loads
``--ckpt`` (default checkpoints/checkpoint.pt), then after each epoch saves it again with
``torch.save(state, path)``, appends a line to ``train.log`` and writes ``runs/NAME/metrics.json``.
``--export PATH`` also saves the weights there (an absolute path elsewhere, say); ``--shell-log
FILE`` has a shell append a line to FILE each epoch (a process of its own)."""

import argparse
import json
import os
import subprocess

import torch
from torch import nn


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=1000)
    parser.add_argument("--ckpt", default=os.path.join("checkpoints", "checkpoint.pt"))
    parser.add_argument("--log", default="train.log")
    parser.add_argument("--name", default="exp")
    parser.add_argument("--export")
    parser.add_argument("--shell-log")
    args = parser.parse_args()

    torch.manual_seed(0)
    model = nn.Linear(8, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    start = 0
    if os.path.exists(args.ckpt):
        state = torch.load(args.ckpt)
        model.load_state_dict(state["model"])
        start = state["epoch"] + 1
        print(f"resumed from epoch {state['epoch']}", flush=True)
    os.makedirs(os.path.dirname(args.ckpt) or ".", exist_ok=True)
    x = torch.randn(64, 8)
    y = x.sum(1, keepdim=True)
    try:
        for epoch in range(start, start + args.epochs):
            for i in range(0, 64, 16):
                optimizer.zero_grad()
                loss = nn.functional.mse_loss(model(x[i:i + 16]), y[i:i + 16])
                loss.backward()
                optimizer.step()
            torch.save({"model": model.state_dict(), "epoch": epoch, "pid": os.getpid()}, args.ckpt)
            with open(args.log, "a") as f:
                f.write(f"epoch {epoch} loss {loss.item():.4f} pid {os.getpid()}\n")
            os.makedirs(os.path.join("runs", args.name), exist_ok=True)
            with open(os.path.join("runs", args.name, "metrics.json"), "w") as f:
                json.dump({"epoch": epoch, "loss": loss.item()}, f)
            if args.export:
                torch.save(model.state_dict(), args.export)
            if args.shell_log:
                subprocess.run(["sh", "-c", f"echo epoch {epoch} >> {args.shell_log}"], check=True)
    except KeyboardInterrupt:
        print(f"stopped at epoch {epoch}", flush=True)


if __name__ == "__main__":
    main()
