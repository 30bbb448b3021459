"""pytorch/examples' mnist_rnn/main.py, the way it is written, on a small model and synthetic
data: an LSTM over the image's rows (batch_first), BatchNorm1d, Dropout2d, two Linear layers,
Adadelta with a StepLR schedule, and a test pass after each epoch (``model.eval()`` +
``torch.no_grad()``, its own DataLoader). It never calls torch.compile: tuimon's compiled variant
compiles ``Net`` at its first call, and Dynamo cannot (``Attempted to wrap RNN, GRU, or LSTM``),
so that variant runs eager: nothing compiled."""

import argparse

import torch
import torch.nn.functional as F
from torch import nn, optim
from torch.optim.lr_scheduler import StepLR
from torch.utils.data import DataLoader, TensorDataset


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.LSTM(input_size=12, hidden_size=16, batch_first=True)
        self.batchnorm = nn.BatchNorm1d(16)
        self.dropout1 = nn.Dropout2d(0.25)
        self.dropout2 = nn.Dropout2d(0.5)
        self.fc1 = nn.Linear(16, 16)
        self.fc2 = nn.Linear(16, 10)

    def forward(self, input):
        input = input.reshape(-1, 12, 12)
        output, hidden = self.rnn(input)
        output = output[:, -1, :]
        output = self.batchnorm(output)
        output = self.dropout1(output)
        output = self.fc1(output)
        output = F.relu(output)
        output = self.dropout2(output)
        output = self.fc2(output)
        return F.log_softmax(output, dim=1)


def train(args, model, train_loader, optimizer, epoch):
    model.train()
    for batch_idx, (data, target) in enumerate(train_loader):
        optimizer.zero_grad()
        output = model(data)
        loss = F.nll_loss(output, target)
        loss.backward()
        optimizer.step()
        if batch_idx % args.log_interval == 0:
            print(f"Train Epoch: {epoch} [{batch_idx * len(data)}/{len(train_loader.dataset)}]"
                  f"\tLoss: {loss.item():.6f}", flush=True)


def test(model, test_loader):
    model.eval()
    correct = 0
    with torch.no_grad():
        for data, target in test_loader:
            correct += model(data).argmax(dim=1).eq(target).sum().item()
    print(f"\nTest set: Accuracy: {correct}/{len(test_loader.dataset)}\n", flush=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--log-interval", type=int, default=5)
    args = parser.parse_args()
    torch.manual_seed(1)
    g = torch.Generator().manual_seed(0)
    train_set = TensorDataset(torch.randn(320, 1, 12, 12, generator=g),
                              torch.randint(0, 10, (320,), generator=g))
    test_set = TensorDataset(torch.randn(64, 1, 12, 12, generator=g),
                             torch.randint(0, 10, (64,), generator=g))
    train_loader = DataLoader(train_set, batch_size=args.batch_size, shuffle=True)
    test_loader = DataLoader(test_set, batch_size=32)
    model = Net()
    optimizer = optim.Adadelta(model.parameters(), lr=0.1)
    scheduler = StepLR(optimizer, step_size=1, gamma=0.7)
    for epoch in range(1, args.epochs + 1):
        train(args, model, train_loader, optimizer, epoch)
        test(model, test_loader)
        scheduler.step()


if __name__ == "__main__":
    main()
