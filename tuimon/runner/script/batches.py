"""The batches a script's steps trained on, from the batches its DataLoaders gave.

Each ``backward()`` takes the oldest batch fetched and not yet trained on, from the loader last
fetched from. A prefetcher (a class wrapping the loader that fetches the next batch while the
model trains on this one; Lightning's and accelerate's fetchers) fetches each step's batch in
the step before: counted as fetched, an epoch's first step held two batches and its last none,
and Lightning's sanity validation batches before training counted as step 0's samples.
"""

from __future__ import annotations

from collections import deque

import torch

AHEAD = 16  # batches fetched and not yet trained on that are kept (a prefetcher's queue)


class Fetched:
    def __init__(self) -> None:
        self.queue: deque[tuple[int, int]] = deque(maxlen=AHEAD)  # (dataset id, samples)

    def __bool__(self) -> bool:
        return bool(self.queue)

    def add(self, key: int, batch) -> None:
        self.queue.append((key, samples(batch)))

    def trained_on(self, key: int) -> int:
        """A backward(): the samples of the oldest batch of loader ``key`` (older ones of other
        loaders, e.g. a sanity validation before the training loader is known, are dropped)."""
        queue = self.queue
        while queue:
            k, n = queue.popleft()
            if k == key:
                return n
        return 0

    def take_all(self) -> int:
        """A step without backward(): what it fetched."""
        n = sum(n for _, n in self.queue)
        self.queue.clear()
        return n

    def after_gap(self) -> None:
        """A validation pass over the training data itself: at most one batch is ahead."""
        while len(self.queue) > 1:
            self.queue.popleft()


def samples(batch) -> int:
    """The first dimension of a batch's first tensor (a tensor, a tuple/list, or a dict)."""
    if isinstance(batch, torch.Tensor):
        return batch.shape[0] if batch.dim() else 1
    if isinstance(batch, (list, tuple)) and batch:
        return samples(batch[0])
    if isinstance(batch, dict):
        for value in batch.values():
            if isinstance(value, torch.Tensor):
                return samples(value)
    return 0
