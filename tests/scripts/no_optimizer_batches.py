"""In the manner of pytorch/examples regression: no optimizer, the update written by hand after
each backward(), one batch a step; prints each batch's loss."""

import torch

torch.manual_seed(0)
w = torch.zeros(4, 1, requires_grad=True)
target = torch.randn(4, 1)
for batch in range(1, 31):
    x = torch.randn(32, 4)
    loss = ((x @ w - x @ target) ** 2).mean()
    loss.backward()
    with torch.no_grad():
        w -= 0.05 * w.grad
        w.grad.zero_()
    print(f"batch {batch} loss {loss.item():.6f}", flush=True)
