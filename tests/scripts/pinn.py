"""A physics-informed network, as pinn_burgers trains one: an MLP u(t, x) whose loss holds its
own derivatives, taken with ``torch.autograd.grad(create_graph=True)`` (Burgers' residual
u_t + u u_x - nu u_xx), so every step's backward differentiates through a gradient: a double
backward, which torch.compile cannot do. The net is called twice a step (the collocation points,
the boundary points) and trained by Adam."""

import argparse

import torch
from torch import nn


def grad(out, x):
    return torch.autograd.grad(out, x, grad_outputs=torch.ones_like(out), create_graph=True)[0]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=30)
    args = parser.parse_args()
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(2, 32), nn.Tanh(), nn.Linear(32, 32), nn.Tanh(), nn.Linear(32, 1))
    optimizer = torch.optim.Adam(net.parameters(), lr=1e-3)
    inside = torch.rand(256, 2, requires_grad=True)  # (t, x) collocation points
    edge = torch.cat([torch.zeros(32, 1), torch.rand(32, 1) * 2 - 1], dim=1)  # t = 0
    for step in range(args.steps):
        optimizer.zero_grad()
        u = net(inside)
        du = grad(u, inside)
        u_t, u_x = du[:, :1], du[:, 1:]
        u_xx = grad(u_x, inside)[:, 1:]
        residual = u_t + u * u_x - 0.01 / torch.pi * u_xx
        boundary = net(edge) + torch.sin(torch.pi * edge[:, 1:])
        loss = residual.pow(2).mean() + boundary.pow(2).mean()
        loss.backward()
        optimizer.step()
        if step % 10 == 0:
            print(f"step {step}: loss {loss.item():.5f}", flush=True)


if __name__ == "__main__":
    main()
