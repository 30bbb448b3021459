"""Test recipe: the 4th batch is larger than the others, so a compiled model recompiles once."""

import torch

from tuimon.recipe import Recipe


def build(cfg):
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2))
    gen = torch.Generator().manual_seed(cfg.seed)
    sizes = [8, 8, 8, 12]
    batches = [(torch.randn(n, 8, generator=gen), torch.randint(0, 2, (n,), generator=gen))
               for n in sizes]
    return Recipe(model, torch.optim.SGD(model.parameters(), lr=0.1),
                  torch.nn.functional.cross_entropy, batches, name="shape change")
