"""Two trainings in one script, one after the other: a model and its Adam optimizer trained in a
function, let go, then a second pair. Prints whether the first pair was freed once let go (a
tool that holds on to them keeps their memory, a GPU's too, and a DDP model's process group past
the script's end), and the steps each training did."""

import gc
import weakref

import torch
from torch import nn


def train(steps: int, width: int):
    model = nn.Sequential(nn.Linear(16, width), nn.ReLU(), nn.Linear(width, 4))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    x, y = torch.randn(64, 16), torch.randint(0, 4, (64,))
    for _ in range(steps):
        optimizer.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()
    return weakref.ref(model), weakref.ref(optimizer)


def main():
    model, optimizer = train(30, 32)
    gc.collect()
    print(f"first model freed: {model() is None}; its optimizer freed: {optimizer() is None}",
          flush=True)
    train(30, 48)
    print("second training done", flush=True)


if __name__ == "__main__":
    main()
