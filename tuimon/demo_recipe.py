"""The built-in demo that plain ``tuimon`` runs: a small MLP on synthetic data, seconds to train.

It is also the smallest complete example of the recipe contract (see recipes/ for real models).
"""

import torch

from tuimon.recipe import Recipe

DEFAULTS = {"cpu": {"batch_size": 64, "steps": 400}, "cuda": {"batch_size": 256, "steps": 1000}}


def build(cfg):
    model = torch.nn.Sequential(
        torch.nn.Linear(128, 512), torch.nn.GELU(),
        torch.nn.Linear(512, 512), torch.nn.GELU(),
        torch.nn.Linear(512, 10),
    )
    gen = torch.Generator().manual_seed(cfg.seed)
    batches = [(torch.randn(cfg.batch_size, 128, generator=gen).to(cfg.device),
                torch.randint(0, 10, (cfg.batch_size,), generator=gen).to(cfg.device))
               for _ in range(8)]
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    return Recipe(model, optimizer, torch.nn.functional.cross_entropy, batches, name="demo MLP")
