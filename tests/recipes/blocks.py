"""Test recipe: a small transformer of identical blocks, for regional compilation (tuimon try's
``regional`` fix). ``--set depth=N`` blocks (4 by default), ``--set width=D`` (32); ``--set
conv=1`` puts a 2-D convolution stem in front (for ``channels-last``: the inputs are then images).
``--set repeated=0`` makes every block a different class: no repeated block to compile.
``--set varlen=1`` feeds batches of varying token counts (a compiled model recompiles for them
unless dynamic); ``--set item=1`` reads a scalar in forward (a graph break unless captured)."""

import torch
from torch import nn

from tuimon.recipe import Recipe

DEFAULTS = {"cpu": {"batch_size": 8, "steps": 12}, "cuda": {"batch_size": 32, "steps": 40}}
TOKENS = (16, 16, 16, 16)
VARLEN = (16, 11, 9, 13)  # none equal to another dimension (batch 8, features 8): duck sizing


class Block(nn.Module):
    def __init__(self, width: int):
        super().__init__()
        self.norm1 = nn.LayerNorm(width)
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)
        self.norm2 = nn.LayerNorm(width)
        self.fc1 = nn.Linear(width, 4 * width)
        self.fc2 = nn.Linear(4 * width, width)

    def forward(self, x):
        q, k, v = self.qkv(self.norm1(x)).chunk(3, dim=-1)
        x = x + self.proj(nn.functional.scaled_dot_product_attention(q, k, v))
        return x + self.fc2(nn.functional.gelu(self.fc1(self.norm2(x))))


def distinct(i: int, width: int) -> nn.Module:
    """Block i as a class of its own (--set repeated=0)."""
    return type(f"Block{i}", (Block,), {})(width)


class Net(nn.Module):
    def __init__(self, depth: int, width: int, conv: bool, repeated: bool, item: bool = False):
        super().__init__()
        self.item = item
        self.stem = (nn.Conv2d(3, width, 4, stride=4) if conv else nn.Linear(8, width))
        self.blocks = nn.ModuleList(Block(width) if repeated else distinct(i, width)
                                    for i in range(depth))
        self.head = nn.Linear(width, 4)

    def forward(self, x):
        x = self.stem(x)
        if x.dim() == 4:  # the convolution's feature map: its pixels are the tokens
            x = x.flatten(2).transpose(1, 2)
        for block in self.blocks:
            x = block(x)
        if self.item:
            x = x / (1.0 + x.abs().mean().item())  # a scalar read: a graph break unless captured
        return self.head(x.mean(dim=1))


def build(cfg):
    torch.manual_seed(cfg.seed)
    depth, width = int(cfg.extra.get("depth", "4")), int(cfg.extra.get("width", "32"))
    conv = cfg.extra.get("conv", "0") == "1"
    repeated = cfg.extra.get("repeated", "1") == "1"
    item = cfg.extra.get("item", "0") == "1"
    tokens = VARLEN if cfg.extra.get("varlen", "0") == "1" else TOKENS
    model = Net(depth, width, conv, repeated, item).to(cfg.device)
    gen = torch.Generator().manual_seed(cfg.seed)
    shapes = [(cfg.batch_size, 3, 16, 16) if conv else (cfg.batch_size, n, 8) for n in tokens]
    batches = [(torch.randn(*shape, generator=gen).to(cfg.device),
                torch.randint(0, 4, (cfg.batch_size,), generator=gen).to(cfg.device))
               for shape in shapes]
    return Recipe(model, torch.optim.AdamW(model.parameters(), lr=1e-3),
                  nn.CrossEntropyLoss(), batches, name=f"blocks({depth} x {width})")
