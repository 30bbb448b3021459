"""An FSDP2 train.py as torchtitan writes one, small enough for CPU, launched with torchrun:

    torchrun --standalone --nproc-per-node 2 fsdp_train.py --compile block

init_process_group from torchrun's environment (gloo on CPU, nccl on CUDA), ``fully_shard`` each
transformer block and then the root, AdamW, synthetic tokens (each rank its own). ``--compile
block`` compiles each block before sharding it (torchtitan's per-block compile: ``block.compile()``),
``--compile model`` the whole sharded model (``torch.compile(model)``), ``none`` nothing. Ctrl-C
ends it at a step boundary; the process group is destroyed on every rank in ``finally``."""

import argparse
import os

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.fsdp import fully_shard


class TransformerBlock(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x):
        h = self.norm1(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        return x + self.mlp(self.norm2(x))


class Transformer(nn.Module):
    def __init__(self, vocab, dim, heads, n_layers):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.layers = nn.ModuleList(TransformerBlock(dim, heads) for _ in range(n_layers))
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab)

    def forward(self, tokens):
        x = self.embed(tokens)
        for layer in self.layers:
            x = layer(x)
        return self.head(self.norm(x)).clone()  # FSDP2 warns of a view returned by its root


def main():
    parser = argparse.ArgumentParser(description="Train a small transformer with FSDP2.")
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--compile", choices=["none", "block", "model"], default="none")
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--dim", type=int, default=64)
    parser.add_argument("--seq", type=int, default=32)
    parser.add_argument("--batch-size", type=int, default=8)
    args = parser.parse_args()

    backend = "nccl" if torch.cuda.is_available() else "gloo"
    dist.init_process_group(backend)
    rank = dist.get_rank()
    device = torch.device(f"cuda:{os.environ['LOCAL_RANK']}" if backend == "nccl" else "cpu")
    if device.type == "cuda":
        torch.cuda.set_device(device)
    torch.manual_seed(0)  # the same initial weights on every rank
    vocab = 128
    model = Transformer(vocab, args.dim, 4, args.layers).to(device)
    for block in model.layers:
        if args.compile == "block":
            block.compile()
        fully_shard(block)
    fully_shard(model)
    if args.compile == "model":
        model = torch.compile(model)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(rank)  # each rank its own batches

    step = 0
    try:
        for step in range(args.steps):
            tokens = torch.randint(0, vocab, (args.batch_size, args.seq + 1), generator=g).to(device)
            logits = model(tokens[:, :-1])
            loss = nn.functional.cross_entropy(logits.flatten(0, 1), tokens[:, 1:].flatten())
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            if rank == 0 and step % 10 == 0:
                print(f"step {step} loss {loss.item():.4f}", flush=True)
    except KeyboardInterrupt:
        if rank == 0:
            print(f"interrupted at step {step}", flush=True)
    finally:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
