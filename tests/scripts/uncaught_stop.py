"""A loop that does not catch KeyboardInterrupt (most scripts): tuimon's stop at --steps ends it
as Ctrl-C would, uncaught; the code after the loop never runs."""

import torch
from torch import nn

model = nn.Linear(8, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(100_000):
    optimizer.zero_grad()
    model(torch.randn(4, 8)).pow(2).mean().backward()
    optimizer.step()
print("after the loop")
