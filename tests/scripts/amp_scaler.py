"""Mixed precision the way the PyTorch AMP recipe does it: autocast around the forward pass
(bfloat16 on CPU, float16 on CUDA) and a GradScaler around backward and the optimizer step.
--nan-every N makes every N-th loss infinite, like an fp16 overflow, so the scaler skips that
optimizer step and lowers its scale."""

import argparse
import math
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

parser = argparse.ArgumentParser()
parser.add_argument("--epochs", type=int, default=60)
parser.add_argument("--lr", type=float, default=1e-3)
parser.add_argument("--batch-size", type=int, default=32)
parser.add_argument("--seed", type=int, default=0)
parser.add_argument("--nan-every", type=int, default=0, help="make every N-th loss inf (0: never)")
args = parser.parse_args()

torch.manual_seed(args.seed)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 10)).to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
criterion = nn.CrossEntropyLoss()

# autocast and the scaler follow the device the model lives on
device_type = next(model.parameters()).device.type
amp_dtype = torch.float16 if device_type == "cuda" else torch.bfloat16
scaler = torch.amp.GradScaler(device_type)

x = torch.randn(4096, 32)
y = (x[:, :10] + 0.5 * torch.randn(4096, 10)).argmax(1)
loader = DataLoader(TensorDataset(x, y), batch_size=args.batch_size, shuffle=True, num_workers=0)

step = 0
for epoch in range(args.epochs):
    t0 = time.time()
    total, skipped = 0.0, 0
    for xb, yb in loader:
        xb, yb = xb.to(device), yb.to(device)
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast(device_type=device_type, dtype=amp_dtype):
            out = model(xb)
            loss = criterion(out, yb)
        step += 1
        if args.nan_every and step % args.nan_every == 0:
            loss = loss * float("inf")  # simulate an overflow
        scaler.scale(loss).backward()
        scaler.step(optimizer)  # skipped when the gradients hold inf/nan
        scaler.update()  # and the scale is halved
        value = loss.item()
        if math.isfinite(value):
            total += value
        else:
            skipped += 1
    n = len(loader) - skipped
    print(f"epoch {epoch}: loss {total / max(n, 1):.4f}  skipped steps {skipped}  "
          f"scale {scaler.get_scale():g}  ({time.time() - t0:.2f}s)", flush=True)
