"""A plain Hugging Face accelerate loop, as its docs write one: an Accelerator, prepare(), and
accelerator.backward(); --accum micro-batches a step through accelerator.accumulate (the
optimizer steps on the last of them, accelerate's own wrapper skipping the others)."""

import argparse
import time

import torch
from accelerate import Accelerator
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

parser = argparse.ArgumentParser()
parser.add_argument("--epochs", type=int, default=30)
parser.add_argument("--accum", type=int, default=1)
args = parser.parse_args()

accelerator = Accelerator(gradient_accumulation_steps=args.accum)
# each process's place and what accelerate's launcher set for it (read in the run's log)
print(f"process {accelerator.process_index} of {accelerator.num_processes}: "
      f"{accelerator.distributed_type}, mixed precision {accelerator.mixed_precision}", flush=True)
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(32, 128), nn.ReLU(), nn.Linear(128, 10))
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
x = torch.randn(1024, 32)
y = (x @ torch.randn(32, 10)).argmax(1)
loader = DataLoader(TensorDataset(x, y), batch_size=32, shuffle=True, drop_last=True)
model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
for epoch in range(args.epochs):
    t0 = time.perf_counter()
    for xb, yb in loader:
        with accelerator.accumulate(model):
            loss = nn.functional.cross_entropy(model(xb), yb)
            accelerator.backward(loss)
            optimizer.step()
            optimizer.zero_grad()
    accelerator.print(f"epoch {epoch} loss {loss.item():.4f} {time.perf_counter() - t0:.3f}s")
