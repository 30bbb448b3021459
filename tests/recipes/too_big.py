"""A small MLP whose ``--set size=huge`` does not fit in memory: building it asks the CPU
allocator for 64 TiB (a real out-of-memory error, raised before the first step)."""

import torch
from torch import nn

from tuimon.recipe import Recipe

WIDTH = {"small": 16, "huge": 2**40}


def build(cfg):
    width = WIDTH[cfg.extra.get("size", "small")]
    torch.manual_seed(cfg.seed)
    model = nn.Sequential(nn.Linear(16, width), nn.ReLU(), nn.Linear(width, 4))
    x = torch.randn(cfg.batch_size, 16)
    return Recipe(model=model, optimizer=torch.optim.SGD(model.parameters(), lr=0.1),
                  loss_fn=nn.functional.cross_entropy, batches=[(x, (x @ torch.ones(16, 4)).argmax(1))],
                  name=f"mlp({width})")
