"""--seed: the generators a training run draws from (Python's, torch's, numpy's when there)."""

from __future__ import annotations

import random


def seed_everything(torch, seed: int) -> None:
    random.seed(seed)
    torch.manual_seed(seed)
    try:
        import numpy

        numpy.random.seed(seed)
    except ImportError:
        pass
