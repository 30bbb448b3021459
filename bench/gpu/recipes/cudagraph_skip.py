"""A model whose forward scales its input batch in place: under ``reduce-overhead`` Inductor
cannot put that graph in a CUDA graph (the batch is not a static input) and says
"skipping cudagraphs due to mutated inputs" on its log, which tuimon records as a ``cudagraphs``
event and the Why section explains. The GPU programme (bench/gpu/stages.py, stage extras) checks
that tuimon reads it on a real GPU. On the CPU there are no CUDA graphs to skip.
"""

import torch
from torch import nn

from tuimon.recipe import Recipe

DEFAULTS = {"cpu": {"batch_size": 32, "steps": 50}, "cuda": {"batch_size": 256, "steps": 200}}


class ScalesItsInput(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 10))

    def forward(self, x):
        x.mul_(1.0)  # an in-place write to a graph input that is not a parameter or buffer
        return self.net(x)


def build(cfg):
    torch.manual_seed(cfg.seed)
    model = ScalesItsInput().to(cfg.device)
    gen = torch.Generator().manual_seed(cfg.seed)
    batches = [(torch.randn(cfg.batch_size, 64, generator=gen).to(cfg.device),
                torch.randint(0, 10, (cfg.batch_size,), generator=gen).to(cfg.device))
               for _ in range(4)]
    return Recipe(model=model, optimizer=torch.optim.SGD(model.parameters(), lr=0.01),
                  loss_fn=nn.functional.cross_entropy, batches=batches, name="cudagraph skip")
