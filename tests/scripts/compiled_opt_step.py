"""The optimizer step compiled on its own, as PyTorch's tutorial "Compiling the optimizer with
torch.compile" does: ``@torch.compile def opt_step(): opt.step()``. ``--backend eager`` traces
with Dynamo without Inductor's code generation (quick)."""

import argparse

import torch
from torch import nn

parser = argparse.ArgumentParser()
parser.add_argument("--backend", default="inductor")
parser.add_argument("--steps", type=int, default=100000)
args = parser.parse_args()

model = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)


@torch.compile(fullgraph=False, backend=args.backend)
def opt_step():
    opt.step()


for _ in range(args.steps):
    x = torch.randn(32, 64)
    loss = model(x).square().mean()
    opt.zero_grad()
    loss.backward()
    opt_step()
