"""Test recipe: an optimizer-bound step. Many small parameters (``--set params=N`` scalars, 200
by default, next to one small layer) trained by AdamW without foreach: the optimizer walks the
parameters one by one in Python, so optimizer.step() is most of the step, and torch.compile of
the model leaves it as it is (compile the optimizer step too: mode default+opt)."""

import torch
from torch import nn

from tuimon.recipe import Recipe

DEFAULTS = {"cpu": {"batch_size": 8, "steps": 60}, "cuda": {"batch_size": 8, "steps": 200}}


class ManySmall(nn.Module):
    def __init__(self, n: int):
        super().__init__()
        self.head = nn.Linear(8, 2)
        self.small = nn.ParameterList([nn.Parameter(torch.zeros(1)) for _ in range(n)])

    def forward(self, x):
        return self.head(x) + torch.cat(list(self.small)).sum()


def build(cfg):
    torch.manual_seed(cfg.seed)
    n = int(cfg.extra.get("params", "200"))
    model = ManySmall(n).to(cfg.device)
    gen = torch.Generator().manual_seed(cfg.seed)
    batches = [(torch.randn(cfg.batch_size, 8, generator=gen).to(cfg.device),
                torch.randint(0, 2, (cfg.batch_size,), generator=gen).to(cfg.device)) for _ in range(4)]
    # --set foreach=unset: AdamW without the argument (torch's own default; tuimon try's foreach
    # fix may then give it one); by default the for-loop this recipe is about, asked for
    foreach = {} if cfg.extra.get("foreach") == "unset" else {"foreach": False}
    return Recipe(model, torch.optim.AdamW(model.parameters(), lr=1e-3, **foreach),
                  nn.CrossEntropyLoss(), batches, name=f"optimizer_heavy({n} small parameters)")
