"""A training loop with a data prefetcher, as the ImageNet examples of NVIDIA's apex write it: a
class wrapping the DataLoader's iterator that fetches the next batch (onto the GPU, on a side
stream, when there is one) while the model trains on the current one. So each step fetches the
*next* step's batch: the first batch of an epoch is fetched before its first step, and the last
step of an epoch fetches nothing.

``--sanity-batches N`` runs N validation batches before training, as Lightning's sanity check
does (model.eval(), no_grad, another DataLoader); they are not training samples.
``--val-batch-size B`` validates after each epoch in batches of B from the training data itself
(another DataLoader over the same dataset)."""

import argparse

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


class DataPrefetcher:
    def __init__(self, loader, device):
        self.loader = iter(loader)
        self.device = device
        self.stream = torch.cuda.Stream() if device.type == "cuda" else None
        self.preload()

    def preload(self):
        try:
            self.next_input, self.next_target = next(self.loader)
        except StopIteration:
            self.next_input = self.next_target = None
            return
        if self.stream is not None:
            with torch.cuda.stream(self.stream):
                self.next_input = self.next_input.to(self.device, non_blocking=True)
                self.next_target = self.next_target.to(self.device, non_blocking=True)

    def next(self):
        if self.stream is not None:
            torch.cuda.current_stream().wait_stream(self.stream)
        batch = self.next_input, self.next_target
        self.preload()
        return batch


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--samples", type=int, default=100)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--sanity-batches", type=int, default=0)
    parser.add_argument("--val-batch-size", type=int, default=0)
    args = parser.parse_args()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    g = torch.Generator().manual_seed(0)
    x = torch.randn(args.samples, 32, generator=g)
    y = (x @ torch.randn(32, 10, generator=g)).argmax(1)
    train = DataLoader(TensorDataset(x, y), batch_size=args.batch_size, shuffle=True)
    val = DataLoader(TensorDataset(x[:64], y[:64]), batch_size=32)
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 10)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    criterion = nn.CrossEntropyLoss()
    if args.sanity_batches:
        model.eval()
        with torch.no_grad():
            for k, (xb, yb) in enumerate(val):
                if k == args.sanity_batches:
                    break
                criterion(model(xb.to(device)), yb.to(device))
        model.train()
    try:
        for epoch in range(args.epochs):
            prefetcher = DataPrefetcher(train, device)
            xb, yb = prefetcher.next()
            step = 0
            while xb is not None:
                loss = criterion(model(xb), yb)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                xb, yb = prefetcher.next()
                step += 1
            print(f"epoch {epoch}: {step} steps, loss {loss.item():.4f}", flush=True)
            if args.val_batch_size:
                model.eval()
                with torch.no_grad():
                    for xb, yb in DataLoader(train.dataset, batch_size=args.val_batch_size):
                        criterion(model(xb.to(device)), yb.to(device))
                model.train()
    except KeyboardInterrupt:
        print("interrupted", flush=True)


if __name__ == "__main__":
    main()
