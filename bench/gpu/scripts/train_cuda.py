"""An unmodified train.py for the GPU programme's essential stage: a DataLoader, autocast with a
GradScaler on CUDA (bf16 autocast on a CPU), and after each epoch a checkpoint and a log line
written in the working directory, the files tuimon keeps apart for each variant."""

import argparse
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

parser = argparse.ArgumentParser()
parser.add_argument("--epochs", type=int, default=1000)
parser.add_argument("--batch-size", type=int, default=256)
parser.add_argument("--width", type=int, default=512)
args = parser.parse_args()

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Sequential(nn.Linear(64, args.width), nn.GELU(), nn.Linear(args.width, args.width), nn.GELU(),
                      nn.Linear(args.width, 10)).to(device)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
scaler = torch.amp.GradScaler(device.type, enabled=device.type == "cuda")
amp_dtype = torch.float16 if device.type == "cuda" else torch.bfloat16

x = torch.randn(8192, 64)
y = (x[:, :10] + 0.3 * torch.randn(8192, 10)).argmax(1)
loader = DataLoader(TensorDataset(x, y), batch_size=args.batch_size, shuffle=True)

for epoch in range(args.epochs):
    t0 = time.time()
    for xb, yb in loader:
        xb, yb = xb.to(device, non_blocking=True), yb.to(device, non_blocking=True)
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast(device_type=device.type, dtype=amp_dtype):
            loss = nn.functional.cross_entropy(model(xb), yb)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
    torch.save({"model": model.state_dict(), "epoch": epoch}, "checkpoint.pt")
    with open("train.log", "a") as log:
        log.write(f"epoch {epoch}: loss {loss.item():.4f} ({time.time() - t0:.2f}s)\n")
