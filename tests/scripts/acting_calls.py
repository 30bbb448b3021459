"""A DQN-shaped loop: between updates the Q-network acts on one observation at a time with
gradients on (as cleanrl's dqn.py does: argmax of its output, never differentiated), and every
--train-every acting calls one update on a batch of --batch. The update's step holds the acting
calls before it; only the update is trained."""

import argparse

import torch
from torch import nn

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=40)
parser.add_argument("--train-every", type=int, default=4)
parser.add_argument("--batch", type=int, default=32)
args = parser.parse_args()

torch.manual_seed(0)
q = nn.Sequential(nn.Linear(8, 64), nn.ReLU(), nn.Linear(64, 4))
optimizer = torch.optim.Adam(q.parameters(), lr=1e-3)
for step in range(args.steps):
    for _ in range(args.train_every):  # acting: batch 1, gradients on, never differentiated
        action = q(torch.randn(1, 8)).argmax(dim=1)
    obs, target = torch.randn(args.batch, 8), torch.randn(args.batch)
    loss = nn.functional.mse_loss(q(obs).max(dim=1).values, target)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    if step % 10 == 0:
        print(f"step {step} loss {loss.item():.4f}", flush=True)
