"""In the manner of nanoGPT's train.py: an evaluation at iteration 0, before the first training
step (model.eval() under torch.no_grad(), model.train() after), then every 10 iterations."""

import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 16))
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
data = torch.randn(256, 16)


@torch.no_grad()
def estimate_loss(iters: int = 4):
    model.eval()
    losses = [nn.functional.mse_loss(model(b), b).item() for b in data[:64 * iters].split(64)]
    model.train()
    return sum(losses) / len(losses)


for it in range(40):
    if it % 10 == 0:
        print(f"iter {it}: val loss {estimate_loss():.4f}", flush=True)
    batch = data[torch.randint(0, 256, (32,))]
    loss = nn.functional.mse_loss(model(batch), batch)
    loss.backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
