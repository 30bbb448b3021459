"""A recipe for bench/aa_guard.py: a CPU-bound MLP whose step does a known amount of work.

``--set depth=N`` (default 20) stacks N equal Linear+ReLU blocks, so a step's time grows with N
(the optimizer and the loss are a small fixed part): ``depth=23`` is a ~15 % slower step, as a code
change that adds work would be. ``--set tag=...`` changes nothing: two variants that differ only
by it are an A/A pair inside one session.
"""

import torch
from torch import nn

from tuimon.recipe import Recipe

WIDTH, BATCH = 256, 64
DEFAULTS = {"cpu": {"batch_size": BATCH, "steps": 600}, "cuda": {"batch_size": BATCH, "steps": 3000}}


def build(cfg):
    depth = int(cfg.extra.get("depth", "20"))
    cfg.extra.get("tag")  # read, so that tuimon does not call it a typo; it changes nothing
    blocks = [nn.Sequential(nn.Linear(WIDTH, WIDTH), nn.ReLU()) for _ in range(depth)]
    model = nn.Sequential(*blocks, nn.Linear(WIDTH, 10))
    g = torch.Generator().manual_seed(0)
    batches = [(torch.randn(BATCH, WIDTH, generator=g), torch.randint(0, 10, (BATCH,), generator=g))
               for _ in range(8)]
    return Recipe(model, torch.optim.SGD(model.parameters(), lr=0.01), nn.CrossEntropyLoss(), batches,
                  name="aa_mlp")
