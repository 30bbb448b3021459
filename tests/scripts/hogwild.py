"""pytorch/examples' mnist_hogwild, the way it is written, on a small model and synthetic data:
the model's parameters in shared memory (``model.share_memory()``), ``torch.multiprocessing``
with the ``spawn`` start method, ``--num-processes`` children that each train the shared model
with their own SGD optimizer and DataLoader (Hogwild: no lock), joined; then a test pass in the
script's own process. The script's own process never steps an optimizer."""

import argparse
import os

import torch
import torch.multiprocessing as mp
import torch.nn.functional as F
from torch import nn, optim
from torch.utils.data import DataLoader, TensorDataset


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 4, kernel_size=3)
        self.fc1 = nn.Linear(4 * 3 * 3, 16)
        self.fc2 = nn.Linear(16, 10)

    def forward(self, x):
        x = F.relu(F.max_pool2d(self.conv1(x), 2))
        x = x.view(-1, 4 * 3 * 3)
        x = F.relu(self.fc1(x))
        x = F.dropout(x, training=self.training)
        return F.log_softmax(self.fc2(x), dim=1)


def train(rank, args, model, dataset, dataloader_kwargs):
    torch.manual_seed(args.seed + rank)
    train_loader = DataLoader(dataset, **dataloader_kwargs)
    optimizer = optim.SGD(model.parameters(), lr=args.lr, momentum=0.5)
    pid = os.getpid()
    for epoch in range(1, args.epochs + 1):
        model.train()
        for batch_idx, (data, target) in enumerate(train_loader):
            optimizer.zero_grad()
            loss = F.nll_loss(model(data), target)
            loss.backward()
            optimizer.step()
            if batch_idx % args.log_interval == 0:
                print(f"{pid}\tTrain Epoch: {epoch} [{batch_idx * len(data)}/{len(train_loader.dataset)}]"
                      f"\tLoss: {loss.item():.6f}", flush=True)


def test(model, dataset, dataloader_kwargs):
    model.eval()
    correct = 0
    with torch.no_grad():
        for data, target in DataLoader(dataset, **dataloader_kwargs):
            correct += model(data).argmax(dim=1).eq(target).sum().item()
    print(f"\nTest set: Accuracy: {correct}/{len(dataset)}\n", flush=True)


def fake_mnist(n, generator):
    return TensorDataset(torch.randn(n, 1, 8, 8, generator=generator),
                         torch.randint(0, 10, (n,), generator=generator))


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--log-interval", type=int, default=5)
    parser.add_argument("--num-processes", type=int, default=2)
    args = parser.parse_args()
    g = torch.Generator().manual_seed(0)
    dataset1, dataset2 = fake_mnist(320, g), fake_mnist(64, g)
    kwargs = {"batch_size": args.batch_size, "shuffle": True}
    torch.manual_seed(args.seed)
    mp.set_start_method("spawn", force=True)
    model = Net()
    model.share_memory()
    processes = []
    for rank in range(args.num_processes):
        p = mp.Process(target=train, args=(rank, args, model, dataset1, kwargs))
        p.start()
        processes.append(p)
    for p in processes:
        p.join()
    test(model, dataset2, kwargs)
