"""The package's entry point: reads a JSON config, trains, prints a line per epoch."""

import argparse
import json

import torch
from torch.utils.data import DataLoader, TensorDataset

from .model import make_model


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--config", required=True)
    cfg = json.load(open(p.parse_args().config))
    torch.manual_seed(0)
    model = make_model(cfg["width"])
    opt = torch.optim.AdamW(model.parameters(), lr=cfg["lr"])
    data = DataLoader(TensorDataset(torch.randn(1024, 32), torch.randint(0, 10, (1024,))),
                      batch_size=cfg["batch_size"], shuffle=True)
    for epoch in range(cfg["epochs"]):
        for x, y in data:
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
        print(f"epoch {epoch}: loss {loss.item():.4f}", flush=True)


if __name__ == "__main__":
    main()
