"""A tiny GAN: a discriminator step then a generator step each iteration, two Adam optimizers,
data made in the loop (no DataLoader)."""

import argparse

import torch
from torch import nn

p = argparse.ArgumentParser()
p.add_argument("--iters", type=int, default=3000)
args = p.parse_args()

G = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 2))
D = nn.Sequential(nn.Linear(2, 32), nn.ReLU(), nn.Linear(32, 1))
opt_g = torch.optim.Adam(G.parameters(), lr=1e-3)
opt_d = torch.optim.Adam(D.parameters(), lr=1e-3)
bce = nn.BCEWithLogitsLoss()
for it in range(args.iters):
    real = torch.randn(64, 2) * 0.5 + 2.0
    fake = G(torch.randn(64, 8))
    opt_d.zero_grad()
    loss_d = bce(D(real), torch.ones(64, 1)) + bce(D(fake.detach()), torch.zeros(64, 1))
    loss_d.backward()
    opt_d.step()
    opt_g.zero_grad()
    loss_g = bce(D(fake), torch.ones(64, 1))
    loss_g.backward()
    opt_g.step()
    if it % 500 == 0:
        print(f"iter {it}: D {loss_d.item():.3f} G {loss_g.item():.3f}", flush=True)
