"""Test recipe: an LSTM over a sequence and a linear head (mnist_rnn's shape), which Dynamo
cannot compile (``Attempted to wrap RNN, GRU, or LSTM``): the compiled variant runs eager, and
tuimon must say that nothing was compiled, not count the failed attempt as a graph."""

import torch
from torch import nn

from tuimon.recipe import Recipe


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.LSTM(8, 16, batch_first=True)
        self.head = nn.Linear(16, 4)

    def forward(self, x):
        out, _ = self.rnn(x)
        return self.head(out[:, -1])


def build(cfg):
    torch.manual_seed(cfg.seed)
    model = Net().to(cfg.device)
    gen = torch.Generator().manual_seed(cfg.seed)
    batches = [(torch.randn(16, 6, 8, generator=gen).to(cfg.device),
                torch.randint(0, 4, (16,), generator=gen).to(cfg.device)) for _ in range(4)]
    return Recipe(model, torch.optim.SGD(model.parameters(), lr=0.05), nn.CrossEntropyLoss(), batches,
                  name="lstm_head")
