"""A DistributedDataParallel train.py as people write them, launched with torchrun:

    torchrun --standalone --nproc-per-node 2 ddp_train.py --epochs 3

init_process_group from torchrun's environment, a DistributedSampler so each rank trains on its
own shard, DDP around the model, rank 0 alone logs and saves checkpoints, barrier at each
epoch's end, destroy_process_group in ``finally``. The flags after ``--slow-rank`` are the
test's levers (a rank whose data loading is slower; a rank slower in forward; a rank that raises
at a step)."""

import argparse
import os
import time

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset, TensorDataset
from torch.utils.data.distributed import DistributedSampler


class SlowDataset(Dataset):
    """Wraps a dataset: each item takes a little longer to load (a slow disk on one node)."""

    def __init__(self, inner, delay_s):
        self.inner, self.delay_s = inner, delay_s

    def __len__(self):
        return len(self.inner)

    def __getitem__(self, i):
        time.sleep(self.delay_s)
        return self.inner[i]


class Pause(nn.Module):
    """A layer that takes its time and computes nothing: a rank slower in forward."""

    def __init__(self, seconds):
        super().__init__()
        self.seconds = seconds

    def forward(self, x):
        time.sleep(self.seconds)
        return x


class AbortAtTeardown:
    """Held by a module global: its __del__ runs as the interpreter clears the modules, after
    every atexit handler."""

    def __del__(self):
        os.abort()


_BOMB = None


def make_data(n, dim=32, classes=10):
    g = torch.Generator().manual_seed(0)  # the same data on every rank; the sampler shards it
    x = torch.randn(n, dim, generator=g)
    y = (x @ torch.randn(dim, classes, generator=g)).argmax(1)
    return TensorDataset(x, y)


def main():
    parser = argparse.ArgumentParser(description="Train a small MLP with DDP.")
    parser.add_argument("--epochs", type=int, default=50)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--ckpt", default=None)
    parser.add_argument("--slow-rank", type=int, default=-1, help="this rank loads its data slower")
    parser.add_argument("--slow-ms", type=float, default=0.5, help="per sample, on the slow rank")
    parser.add_argument("--slow-forward-rank", type=int, default=-1,
                        help="this rank's forward is slower (a slower GPU, a heavier shard)")
    parser.add_argument("--slow-forward-ms", type=float, default=5.0, help="per step, in forward")
    parser.add_argument("--raise-rank", type=int, default=-1, help="this rank raises at --raise-at")
    parser.add_argument("--raise-at", type=int, default=10)
    parser.add_argument("--abort-at-exit-rank", type=int, default=-1,
                        help="this rank aborts (SIGABRT) as its interpreter tears down, after "
                        "training: as gloo's destructor did when a process group outlived main()")
    args = parser.parse_args()

    if int(os.environ.get("RANK", "-1")) == args.abort_at_exit_rank:
        global _BOMB
        _BOMB = AbortAtTeardown()
    backend = "nccl" if torch.cuda.is_available() else "gloo"
    dist.init_process_group(backend)
    rank, world = dist.get_rank(), dist.get_world_size()
    local_rank = int(os.environ["LOCAL_RANK"])
    device = torch.device(f"cuda:{local_rank}" if backend == "nccl" else "cpu")
    if device.type == "cuda":
        torch.cuda.set_device(device)

    data = make_data(2048)
    if rank == args.slow_rank:
        data = SlowDataset(data, args.slow_ms / 1000.0)
    sampler = DistributedSampler(data, num_replicas=world, rank=rank, shuffle=True, seed=0)
    loader = DataLoader(data, batch_size=args.batch_size, sampler=sampler)

    layers = [nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 10)]
    if rank == args.slow_forward_rank:
        layers.insert(0, Pause(args.slow_forward_ms / 1000.0))  # no parameters: DDP sees the same
    model = DDP(nn.Sequential(*layers).to(device),
                device_ids=[local_rank] if device.type == "cuda" else None)
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)

    step = 0
    try:
        for epoch in range(args.epochs):
            sampler.set_epoch(epoch)
            model.train()
            for xb, yb in loader:
                xb, yb = xb.to(device), yb.to(device)
                if rank == args.raise_rank and step == args.raise_at:
                    raise RuntimeError(f"bad batch on rank {rank} at step {step}")
                optimizer.zero_grad()
                loss = criterion(model(xb), yb)
                loss.backward()
                optimizer.step()
                step += 1
            dist.barrier()
            if rank == 0:
                print(f"epoch {epoch + 1}/{args.epochs} loss {loss.item():.4f}", flush=True)
                if args.ckpt:
                    torch.save(model.module.state_dict(), args.ckpt)
    except KeyboardInterrupt:
        if rank == 0:
            print(f"interrupted at step {step}", flush=True)
    finally:
        dist.destroy_process_group()
        print(f"rank {rank}: cleanup done", flush=True)


if __name__ == "__main__":
    main()
