"""Test recipe: each step spins the CPU for --set spin_ms=N (default 20). In the variant of
compile mode --set noisy_mode=M (default "default"; cfg.mode says which one this is) it
touches the file --set poke=PATH on every step of its busy blocks: every block of --set
block=K steps (default 50), or every other one from the first with --set noisy_every=2. A
burner process the test runs beside the session (not a child of any run) busy-loops while the
file was touched in the last 0.1 s: a noisy neighbour during exactly those steps."""

import os
import time

import torch

from tuimon.recipe import Recipe


def build(cfg):
    model = torch.nn.Linear(8, 2)
    spin = float(cfg.extra.get("spin_ms", "20")) / 1000.0
    poke = cfg.extra.get("poke")
    block = int(cfg.extra.get("block", "50"))
    every = int(cfg.extra.get("noisy_every", "1"))
    noisy = poke and cfg.mode == cfg.extra.get("noisy_mode", "default")
    calls = {"n": 0}

    def forward_loss(m, x, y):
        k = calls["n"] // block
        calls["n"] += 1
        if noisy and k % every == 0:
            os.utime(poke)
        end = time.perf_counter() + spin
        while time.perf_counter() < end:
            pass
        return torch.nn.functional.cross_entropy(m(x), y)

    batches = [(torch.randn(4, 8), torch.randint(0, 2, (4,)))]
    return Recipe(model, torch.optim.SGD(model.parameters(), lr=0.1), None, batches,
                  forward_loss=forward_loss, name="noisy")
