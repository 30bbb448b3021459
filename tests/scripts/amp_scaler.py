"""Mixed precision the usual way: autocast around the forward, a GradScaler around backward and
the step; --nan-every N makes every N-th loss infinite so the scaler skips that step."""

import argparse

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

p = argparse.ArgumentParser()
p.add_argument("--epochs", type=int, default=20)
p.add_argument("--lr", type=float, default=1e-3)
p.add_argument("--nan-every", type=int, default=0)
args = p.parse_args()

device = "cuda" if torch.cuda.is_available() else "cpu"
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 10)).to(device)
opt = torch.optim.Adam(model.parameters(), lr=args.lr)
scaler = torch.amp.GradScaler(device)
dtype = torch.float16 if device == "cuda" else torch.bfloat16
data = DataLoader(TensorDataset(torch.randn(1024, 32), torch.randint(0, 10, (1024,))), batch_size=32)
step = 0
for epoch in range(args.epochs):
    for x, y in data:
        x, y = x.to(device), y.to(device)
        opt.zero_grad()
        with torch.autocast(device_type=device, dtype=dtype):
            loss = nn.functional.cross_entropy(model(x), y)
        step += 1
        if args.nan_every and step % args.nan_every == 0:
            loss = loss * float("inf")
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
    print(f"epoch {epoch}: loss {loss.item():.4f} scale {scaler.get_scale()}", flush=True)
