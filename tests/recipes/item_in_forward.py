"""Test recipe: a ``.item()`` inside a named submodule's forward, for the profiler's sync detector.

``probe`` reads a scalar from its activations on every call (the kind of line that, on a GPU,
makes the host wait for the device in every step). The detector must name ``probe``.
"""

import torch
from torch import nn

from tuimon.recipe import Recipe


class Probe(nn.Module):
    def __init__(self, width: int):
        super().__init__()
        self.linear = nn.Linear(width, width)
        self.seen = 0.0

    def forward(self, x):
        y = self.linear(x)
        self.seen += y.abs().mean().item()  # a scalar read: a host<->device sync on a GPU
        return y


class Net(nn.Module):
    def __init__(self, width: int = 64):
        super().__init__()
        self.stem = nn.Sequential(nn.Linear(32, width), nn.ReLU())
        self.probe = Probe(width)
        self.head = nn.Linear(width, 4)

    def forward(self, x):
        return self.head(self.probe(self.stem(x)))


def build(cfg):
    torch.manual_seed(cfg.seed)
    model = Net().to(cfg.device)
    gen = torch.Generator().manual_seed(cfg.seed)
    batches = [(torch.randn(16, 32, generator=gen).to(cfg.device),
                torch.randint(0, 4, (16,), generator=gen).to(cfg.device)) for _ in range(4)]
    return Recipe(model, torch.optim.SGD(model.parameters(), lr=0.05), nn.CrossEntropyLoss(), batches,
                  name="item_in_forward")
