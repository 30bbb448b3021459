"""A WGAN-GP in the style of the public PyTorch-GAN scripts: the critic (discriminator) steps on
every batch, the generator on every --n-critic-th; the generator's optimizer is made first; the
gradient penalty takes torch.autograd.grad with create_graph; losses printed every --log-every
batches."""

import argparse

import torch
from torch import nn

parser = argparse.ArgumentParser()
parser.add_argument("--batches", type=int, default=400)
parser.add_argument("--n-critic", type=int, default=5)
parser.add_argument("--batch-size", type=int, default=32)
parser.add_argument("--latent-dim", type=int, default=16)
parser.add_argument("--log-every", type=int, default=10)
args = parser.parse_args()
torch.manual_seed(0)


class Generator(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(args.latent_dim, 64), nn.ReLU(), nn.Linear(64, 8))

    def forward(self, z):
        return self.net(z)


class Critic(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(8, 64), nn.LeakyReLU(0.2), nn.Linear(64, 1))

    def forward(self, x):
        return self.net(x)


generator, critic = Generator(), Critic()
optimizer_G = torch.optim.Adam(generator.parameters(), lr=1e-4, betas=(0.5, 0.9))
optimizer_D = torch.optim.Adam(critic.parameters(), lr=1e-4, betas=(0.5, 0.9))


def gradient_penalty(real, fake):
    alpha = torch.rand(real.size(0), 1)
    mixed = (alpha * real + (1 - alpha) * fake).requires_grad_(True)
    out = critic(mixed)
    grads = torch.autograd.grad(out, mixed, torch.ones_like(out), create_graph=True)[0]
    return ((grads.norm(2, dim=1) - 1) ** 2).mean()


for i in range(args.batches):
    real = torch.randn(args.batch_size, 8) * 0.5 + 1.0
    optimizer_D.zero_grad()
    fake = generator(torch.randn(args.batch_size, args.latent_dim))
    d_loss = -critic(real).mean() + critic(fake.detach()).mean() + 10 * gradient_penalty(real, fake.detach())
    d_loss.backward()
    optimizer_D.step()
    optimizer_G.zero_grad()
    if i % args.n_critic == 0:
        g_loss = -critic(generator(torch.randn(args.batch_size, args.latent_dim))).mean()
        g_loss.backward()
        optimizer_G.step()
    if i % args.log_every == 0:
        print(f"[Batch {i}/{args.batches}] [D loss: {d_loss.item():.6f}] [G loss: {g_loss.item():.6f}]",
              flush=True)
