"""Test recipe: each step allocates and touches a fresh --set mb=N MiB buffer (default 64), as
big activations do. Above glibc's largest adaptive mmap threshold (32 MiB) every such block is
mapped for the step and returned to the kernel after it, so each step page-faults it in again;
with --pin-malloc (256 MiB) it comes from the heap and is reused."""

import torch

from tuimon.recipe import Recipe


def build(cfg):
    model = torch.nn.Linear(8, 2)
    floats = int(float(cfg.extra.get("mb", "64")) * 2**20) // 4

    def forward_loss(m, x, y):
        scratch = torch.ones(floats)  # every page written: every page faulted in
        return torch.nn.functional.cross_entropy(m(x), y) + scratch[-1] * 0

    batches = [(torch.randn(4, 8), torch.randint(0, 2, (4,)))]
    return Recipe(model, torch.optim.SGD(model.parameters(), lr=0.1), None, batches,
                  forward_loss=forward_loss, name="alloc")
