"""A small transformer of identical blocks trained from a DataLoader, written the usual way (for
tuimon try's fixes, applied from outside): AdamW with no foreach / fused, a DataLoader with no
workers, the model compiled by the script only with ``--compile`` (else tuimon's auto-compile
does). ``--item`` reads a scalar in forward (a graph break unless scalars are captured);
``--varlen`` feeds batches of varying sequence length (recompiles unless dynamic). After the
first epoch it saves a checkpoint in its directory and, with ``--env-out PATH``, starts a Python
child that writes its environment there (what a fix must not leak into)."""

import argparse
import json
import subprocess
import sys

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


class Block(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.fc1 = nn.Linear(width, 2 * width)
        self.fc2 = nn.Linear(2 * width, width)

    def forward(self, x):
        return x + self.fc2(nn.functional.gelu(self.fc1(self.norm(x))))


class Net(nn.Module):
    def __init__(self, width, depth, item):
        super().__init__()
        self.embed = nn.Linear(8, width)
        self.blocks = nn.Sequential(*[Block(width) for _ in range(depth)])
        self.head = nn.Linear(width, 4)
        self.item = item
        self.seen = 0.0

    def forward(self, x):
        x = self.blocks(self.embed(x))
        if self.item:
            scale = x.abs().mean().item()  # a scalar read: a graph break unless captured
            x = x / (1.0 + scale)
        return self.head(x.mean(dim=1))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=50)
    parser.add_argument("--depth", type=int, default=4)
    parser.add_argument("--width", type=int, default=16)
    parser.add_argument("--compile", action="store_true")
    parser.add_argument("--item", action="store_true")
    parser.add_argument("--varlen", action="store_true")
    parser.add_argument("--env-out")
    args = parser.parse_args()
    torch.manual_seed(0)
    model = Net(args.width, args.depth, args.item)
    if args.compile:
        model = torch.compile(model)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x, y = torch.randn(64, 12, 8), torch.randint(0, 4, (64,))
    loader = DataLoader(TensorDataset(x, y), batch_size=8, shuffle=True)
    lengths = [12, 9, 7, 5, 11, 6, 10, 13]  # none 8 (batch, features): duck sizing
    for epoch in range(args.epochs):
        for i, (xb, yb) in enumerate(loader):
            if args.varlen:
                xb = xb[:, :lengths[i % len(lengths)]]
            loss = nn.functional.cross_entropy(model(xb), yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
        if epoch == 0:
            torch.save(model.state_dict(), "checkpoint.pt")
            print(f"workers: {loader.num_workers}", flush=True)
            if args.env_out:
                subprocess.run([sys.executable, "-c", "import json, os, sys; "
                                "json.dump(dict(os.environ), open(sys.argv[1], 'w'))",
                                args.env_out], check=True)
    print(json.dumps({"loss": loss.item()}), flush=True)


if __name__ == "__main__":
    main()
