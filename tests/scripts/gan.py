"""A tiny GAN in the classic two-optimizer style: each iteration a discriminator step
(optD.step()) then a generator step (optG.step()), two Adam optimizers, the "real" data a 2-D
Gaussian sampled inside the loop (no DataLoader, no seeding)."""

import argparse
import time

import torch
from torch import nn

parser = argparse.ArgumentParser()
parser.add_argument("--iters", type=int, default=8000)
parser.add_argument("--lr", type=float, default=2e-4)
parser.add_argument("--batch-size", type=int, default=64)
parser.add_argument("--latent-dim", type=int, default=8)
parser.add_argument("--log-every", type=int, default=500)
args = parser.parse_args()


class Generator(nn.Module):
    def __init__(self, latent_dim):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(latent_dim, 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU(),
                                 nn.Linear(32, 2))

    def forward(self, z):
        return self.net(z)


class Discriminator(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(2, 32), nn.LeakyReLU(0.2), nn.Linear(32, 1))

    def forward(self, x):
        return self.net(x)


def sample_real(n):
    return torch.randn(n, 2) * 0.5 + torch.tensor([2.0, -1.0])


netG, netD = Generator(args.latent_dim), Discriminator()
optG = torch.optim.Adam(netG.parameters(), lr=args.lr, betas=(0.5, 0.999))
optD = torch.optim.Adam(netD.parameters(), lr=args.lr, betas=(0.5, 0.999))
criterion = nn.BCEWithLogitsLoss()
real_label = torch.ones(args.batch_size, 1)
fake_label = torch.zeros(args.batch_size, 1)

t0 = time.time()
for it in range(args.iters):
    real = sample_real(args.batch_size)
    fake = netG(torch.randn(args.batch_size, args.latent_dim))

    # (1) update D: maximize log(D(x)) + log(1 - D(G(z)))
    optD.zero_grad()
    errD = criterion(netD(real), real_label) + criterion(netD(fake.detach()), fake_label)
    errD.backward()
    optD.step()

    # (2) update G: maximize log(D(G(z)))
    optG.zero_grad()
    errG = criterion(netD(fake), real_label)
    errG.backward()
    optG.step()

    if it % args.log_every == 0 or it == args.iters - 1:
        with torch.no_grad():
            mean = netG(torch.randn(1024, args.latent_dim)).mean(0)
        print(f"[{it}/{args.iters}] Loss_D {errD.item():.4f} Loss_G {errG.item():.4f} "
              f"G mean ({mean[0]:.2f}, {mean[1]:.2f})  {time.time() - t0:.1f}s", flush=True)
