"""Test recipe: the runner process dies abruptly (os._exit, like a segfault) at step 3.

Steps take 0.3 s, longer than the runner's flush interval, so each is on disk before the next.
"""

import os
import time

import torch

from tuimon.recipe import Recipe


def build(cfg):
    model = torch.nn.Linear(8, 2)
    calls = {"n": 0}

    def forward_loss(m, x, y):
        calls["n"] += 1
        if calls["n"] > 3:
            print("about to die", flush=True)
            os._exit(7)
        time.sleep(0.3)
        return torch.nn.functional.cross_entropy(m(x), y)

    batches = [(torch.randn(4, 8), torch.randint(0, 2, (4,)))]
    return Recipe(model, torch.optim.SGD(model.parameters(), lr=0.1), None, batches,
                  forward_loss=forward_loss)
