"""Test recipe: under autocast (the amp variants) its forward raises at step --set crash_at=N.

fp32 variants train normally, so one session has a failing and a healthy variant.
"""

import torch

from tuimon.recipe import Recipe


class Model(torch.nn.Module):
    def __init__(self, crash_at: int):
        super().__init__()
        self.lin = torch.nn.Linear(8, 2)
        self.crash_at = crash_at
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        if torch.is_autocast_enabled(x.device.type) and self.calls > self.crash_at:
            raise RuntimeError(f"deliberate failure after {self.crash_at} steps")
        return self.lin(x)


def build(cfg):
    model = Model(int(cfg.extra.get("crash_at", "5")))
    batches = [(torch.randn(4, 8), torch.randint(0, 2, (4,)))]
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    return Recipe(model, opt, torch.nn.functional.cross_entropy, batches, name="crash")
