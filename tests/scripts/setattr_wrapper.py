"""A model wrapper in the manner of Lightning Fabric's ``_FabricModule``: once set up, setting an
attribute the wrapped module has sets it on the wrapped module too (fabric/wrappers.py). A
forward timer put in the wrapper's call slot by plain setattr reached the inner module as well,
whose call then ran the timer again, forever: a RecursionError only under tuimon."""

import torch
from torch import nn


class Wrapper(nn.Module):
    def __init__(self, module: nn.Module) -> None:
        super().__init__()
        self._forward_module = module
        self._original_module = module
        self._initialized = True

    def forward(self, *args, **kwargs):
        return self._forward_module(*args, **kwargs)

    def __setattr__(self, name, value):
        if not getattr(self, "_initialized", False):
            super().__setattr__(name, value)
            return
        original = self._original_module
        if hasattr(original, name):
            setattr(original, name, value)
        if name in dir(self):
            super().__setattr__(name, value)


torch.manual_seed(0)
model = Wrapper(nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4)))
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
x, y = torch.randn(64, 16), torch.randint(0, 4, (64,))
for step in range(60):
    optimizer.zero_grad()
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    optimizer.step()
    if step % 20 == 0:
        print(f"step {step} loss {loss.item():.6f}", flush=True)
