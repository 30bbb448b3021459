"""A step whose parts take known times, LBFGS-style: forward and backward run inside
``optimizer.step(closure)``. Each part spins (the CPU busy, as real work is): a batch
--data-ms, the model's forward --forward-ms, its backward --backward-ms, and the optimizer's
own work --optimizer-ms before the closure. tuimon should read each part as its own time, the
closure's forward and backward taken out of the optimizer's."""

import argparse
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset


def spin(ms: float) -> None:
    end = time.perf_counter() + ms / 1000.0
    while time.perf_counter() < end:
        pass


class SpinningData(Dataset):
    def __init__(self, n: int, ms: float) -> None:
        self.n, self.ms = n, ms

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, idx):
        spin(self.ms)
        return torch.ones(4), torch.zeros(2)


class SlowBackward(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, ms):
        ctx.ms = ms
        return x.clone()

    @staticmethod
    def backward(ctx, grad):
        spin(ctx.ms)
        return grad, None


class Model(nn.Module):
    def __init__(self, forward_ms: float, backward_ms: float) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 2)
        self.forward_ms, self.backward_ms = forward_ms, backward_ms

    def forward(self, x):
        spin(self.forward_ms)
        return SlowBackward.apply(self.fc(x), self.backward_ms)


class SpinningSGD(torch.optim.SGD):
    def __init__(self, params, ms: float, **kwargs) -> None:
        super().__init__(params, **kwargs)
        self.ms = ms

    def step(self, closure=None):
        spin(self.ms)
        loss = closure() if closure is not None else None
        super().step()
        return loss


parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=40)
parser.add_argument("--data-ms", type=float, default=2.0)
parser.add_argument("--forward-ms", type=float, default=3.0)
parser.add_argument("--backward-ms", type=float, default=4.0)
parser.add_argument("--optimizer-ms", type=float, default=1.5)
args = parser.parse_args()

torch.manual_seed(0)
loader = DataLoader(SpinningData(args.steps, args.data_ms), batch_size=None)
model = Model(args.forward_ms, args.backward_ms)
optimizer = SpinningSGD(model.parameters(), args.optimizer_ms, lr=0.01)
for x, y in loader:
    def closure(x=x, y=y):
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        return loss

    optimizer.step(closure)
print("done")
