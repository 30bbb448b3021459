"""Test recipe: each step sleeps --set sleep_ms=N (default 50), for interrupt and timing tests;
--set build_s=S sleeps that long in build() (a run still building)."""

import time

import torch

from tuimon.recipe import Recipe


def build(cfg):
    model = torch.nn.Linear(8, 2)
    delay = float(cfg.extra.get("sleep_ms", "50")) / 1000.0
    time.sleep(float(cfg.extra.get("build_s", "0")))

    def forward_loss(m, x, y):
        time.sleep(delay)
        return torch.nn.functional.cross_entropy(m(x), y)

    batches = [(torch.randn(4, 8), torch.randint(0, 2, (4,)))]
    return Recipe(model, torch.optim.SGD(model.parameters(), lr=0.1), None, batches,
                  forward_loss=forward_loss, name="slow")
