"""A GPT-style loop with gradient accumulation in the style of karpathy's build-nanogpt: each step
runs --accum micro-batches, scales each micro-loss by 1/accum before backward(), adds the detached
scaled losses into loss_accum and prints that (the mean micro-loss) with the step's time."""

import argparse
import time

import torch
from torch import nn
from torch.nn import functional as F

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=60)
parser.add_argument("--accum", type=int, default=4)
parser.add_argument("--batch-size", type=int, default=8)
parser.add_argument("--block", type=int, default=32)
parser.add_argument("--vocab", type=int, default=64)
args = parser.parse_args()
torch.manual_seed(0)
data = torch.randint(0, args.vocab, (20000,))


class TinyLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(args.vocab, 64)
        self.mlp = nn.Sequential(nn.Linear(64, 128), nn.GELU(), nn.Linear(128, 64))
        self.head = nn.Linear(64, args.vocab)

    def forward(self, idx, targets):
        logits = self.head(self.mlp(self.emb(idx)))
        return logits, F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


def batch():
    ix = torch.randint(len(data) - args.block - 1, (args.batch_size,))
    x = torch.stack([data[i:i + args.block] for i in ix])
    y = torch.stack([data[i + 1:i + args.block + 1] for i in ix])
    return x, y


model = TinyLM()
optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
for step in range(args.steps):
    t0 = time.time()
    optimizer.zero_grad()
    loss_accum = 0.0
    for micro_step in range(args.accum):
        x, y = batch()
        logits, loss = model(x, y)
        loss = loss / args.accum
        loss_accum += loss.detach()
        loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    dt = (time.time() - t0) * 1000
    print(f"step {step:4d} | loss: {loss_accum.item():.6f} | dt: {dt:.2f}ms", flush=True)
