"""Tiny MLP on synthetic vectors: the cheapest recipe, for exercising tuimon itself.

64 -> width -> width -> 10 with ReLU; a step takes about a millisecond on CPU, so it shows
per-step overheads (runner, events, compile guards) rather than model compute, and a cold
compile is a few seconds. Labels come from a fixed random linear "teacher", so the loss does fall.

``cfg.image_size`` is unused (inputs are 64-long vectors). Knobs (``--set key=value``):
  width=N        hidden width (default 256)
  graph_break=1  call ``torch._dynamo.graph_break()`` between the two halves of ``forward``,
                 so the compiled variant has two graphs (a no-op in eager)
CPU defaults: batch 32, 300 steps. GPU defaults: batch 256, 1000 steps.
"""

import torch
from torch import nn

from tuimon.recipe import Config, Recipe

IN_FEATURES = 64
NUM_CLASSES = 10
NUM_BATCHES = 8

DEFAULTS = {
    "cpu": {"batch_size": 32, "steps": 300},
    "cuda": {"batch_size": 256, "steps": 1000},
}


class TinyMLP(nn.Module):
    def __init__(self, width: int, graph_break: bool):
        super().__init__()
        self.first = nn.Sequential(nn.Linear(IN_FEATURES, width), nn.ReLU())
        self.rest = nn.Sequential(nn.Linear(width, width), nn.ReLU(), nn.Linear(width, NUM_CLASSES))
        self.graph_break = graph_break

    def forward(self, x):
        x = self.first(x)
        if self.graph_break:
            torch._dynamo.graph_break()
        return self.rest(x)


def _flag(cfg: Config, key: str) -> bool:
    value = cfg.extra.get(key, "0")
    if value not in ("0", "1"):
        raise ValueError(f"tiny_mlp: {key} must be 0 or 1, got {value!r}")
    return value == "1"


def build(cfg: Config) -> Recipe:
    torch.manual_seed(cfg.seed)
    width = int(cfg.extra.get("width", 256))
    model = TinyMLP(width, _flag(cfg, "graph_break")).to(cfg.device)

    gen = torch.Generator().manual_seed(cfg.seed)
    teacher = torch.randn(IN_FEATURES, NUM_CLASSES, generator=gen)
    batches = []
    for _ in range(NUM_BATCHES):
        x = torch.randn(cfg.batch_size, IN_FEATURES, generator=gen)
        batches.append((x.to(cfg.device), (x @ teacher).argmax(dim=1).to(cfg.device)))

    return Recipe(
        model=model,
        optimizer=torch.optim.AdamW(model.parameters(), lr=1e-3),
        loss_fn=nn.CrossEntropyLoss(),
        batches=batches,
        name=f"tiny_mlp(w{width}{', graph break' if model.graph_break else ''})",
    )
