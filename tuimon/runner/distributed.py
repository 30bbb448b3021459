"""A recipe's variant as one rank of a job (``tuimon RECIPE --nproc N``): torch.distributed set up
from the environment torchrun gives each worker (gloo on the CPU, nccl on CUDA, one GPU per
rank: ``cuda:LOCAL_RANK``), the model wrapped in DistributedDataParallel, and this rank's own
shard of the recipe's synthetic batches. The variant's compile mode then compiles the DDP
model, as people write it (``torch.compile(DDP(model))``)."""

from __future__ import annotations

import itertools

from tuimon.runner.device import SetupError


def rank_device(torch, requested: str, local_rank: int, local_world: int) -> str:
    """The device of this rank: the CPU, or the GPU of its local rank."""
    cuda = torch.cuda.is_available()
    if requested == "cpu" or (requested == "auto" and not cuda):
        return "cpu"
    if not cuda:
        raise SetupError(f"--device {requested} asked for, but CUDA is not available here")
    if requested.startswith("cuda:"):
        raise SetupError("--device cuda:N and --nproc do not go together: each rank takes the GPU "
                         "of its local rank (--device cuda); CUDA_VISIBLE_DEVICES picks the GPUs")
    count = torch.cuda.device_count()
    if local_world > count:
        raise SetupError(f"--nproc {local_world} on CUDA needs a GPU per rank, and there "
                         f"{'is' if count == 1 else 'are'} {count} here (--device cpu runs the "
                         "ranks on the CPU)")
    torch.cuda.set_device(local_rank)
    return f"cuda:{local_rank}"


def init(torch, device: str) -> str:
    """Join the job's process group (torchrun's env://); returns the backend."""
    import torch.distributed as dist

    if not dist.is_available():
        raise SetupError("this torch build has no torch.distributed")
    backend = "nccl" if device.startswith("cuda") else "gloo"
    if backend == "nccl" and not dist.is_nccl_available():
        raise SetupError("this torch build has no NCCL: --device cpu runs the ranks with gloo")
    if not dist.is_initialized():
        dist.init_process_group(backend)
    return backend


def wrap(torch, model, device: str):
    from torch.nn.parallel import DistributedDataParallel

    if device.startswith("cuda"):
        index = int(device.split(":", 1)[1])
        return DistributedDataParallel(model, device_ids=[index], output_device=index)
    return DistributedDataParallel(model)


def finish(torch) -> None:
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()


def shard(torch, batches, rank: int, world: int):
    """This rank's batches: every ``world``-th one from its rank on, as a DistributedSampler
    deals samples; a recipe with fewer batches than ranks has each batch cut along its first
    dimension instead (each rank its slice)."""
    if world <= 1:
        return batches
    if type(batches) in (list, tuple):
        if len(batches) >= world:
            return list(batches[rank::world])
        return [_slice(torch, b, rank, world) for b in batches]
    return _Every(batches, rank, world)


def _slice(torch, batch, rank: int, world: int):
    if isinstance(batch, torch.Tensor):
        if batch.dim() == 0 or batch.shape[0] < world:
            raise SetupError(f"a batch of {batch.shape[0] if batch.dim() else 1} samples cannot be "
                             f"shared by {world} ranks: give the recipe a larger --batch-size")
        return torch.tensor_split(batch, world)[rank]
    if isinstance(batch, (list, tuple)):
        return type(batch)(_slice(torch, b, rank, world) for b in batch)
    if isinstance(batch, dict):
        return {k: _slice(torch, v, rank, world) for k, v in batch.items()}
    return batch


class _Every:
    """An iterable recipe's batches, every ``world``-th from ``rank`` (re-iterable)."""

    def __init__(self, source, rank: int, world: int) -> None:
        self.source, self.rank, self.world = source, rank, world

    def __iter__(self):
        return itertools.islice(iter(self.source), self.rank, None, self.world)
