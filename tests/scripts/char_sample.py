"""A character-level GRU language model in the style of makemore: it trains on random batches and,
every --sample-every steps, samples from the model under torch.no_grad() without model.eval(),
one character at a time on a sequence that grows (1, 2, ... --sample-len characters): each length
is a new shape, so a compiled model recompiles outside training's steps."""

import argparse

import torch
from torch import nn
from torch.nn import functional as F

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=120)
parser.add_argument("--sample-every", type=int, default=40)
parser.add_argument("--sample-len", type=int, default=8)
parser.add_argument("--batch-size", type=int, default=16)
parser.add_argument("--block", type=int, default=12)
parser.add_argument("--vocab", type=int, default=27)
args = parser.parse_args()
torch.manual_seed(0)
words = torch.randint(1, args.vocab, (4000, args.block + 1))


class CharGRU(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(args.vocab, 32)
        self.cell = nn.GRUCell(32, 64)
        self.head = nn.Linear(64, args.vocab)

    def forward(self, idx):
        h = torch.zeros(idx.size(0), 64)
        out = []
        for t in range(idx.size(1)):  # a Python loop over the sequence: each length its own graph
            h = self.cell(self.emb(idx[:, t]), h)
            out.append(self.head(h))
        return torch.stack(out, 1)


@torch.no_grad()
def sample(model, n):
    idx = torch.zeros(1, 1, dtype=torch.long)
    for _ in range(n - 1):
        logits = model(idx)[:, -1]
        idx = torch.cat([idx, torch.multinomial(F.softmax(logits, -1), 1)], 1)
    return idx[0].tolist()


model = CharGRU()
optimizer = torch.optim.AdamW(model.parameters(), lr=5e-3)
for step in range(args.steps):
    rows = words[torch.randint(len(words), (args.batch_size,))]
    logits = model(rows[:, :-1])
    loss = F.cross_entropy(logits.reshape(-1, args.vocab), rows[:, 1:].reshape(-1))
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()
    if step % 10 == 0:
        print(f"step {step} | loss {loss.item():.4f}", flush=True)
    if step > 0 and step % args.sample_every == 0:
        print("sample:", "".join(chr(96 + c) for c in sample(model, args.sample_len)), flush=True)
