"""A small stand-in for pytorch/examples siamese_network, the script that crashed under capture.

The same shape of run: a small conv trunk run twice a step (the two images of a pair), the two
feature vectors joined and classified, BCE loss, Adadelta at lr 1.0, a DataLoader without
workers, and after each epoch a test pass in eval() and no_grad with its own batch size (in a
compiled variant, a recompile). Synthetic pairs; it knows nothing of tuimon.

It watches for the condition of the crash under capture (docs/profiler.md): a record_function
span begun while one torch.profiler session recorded, ended while another one records. torch
then writes into freed memory, which crashes the process later, or never, by luck; the watch
makes it certain: it says so on stderr and exits 3 there and then. ``--no-watch`` leaves torch
alone (the real crash, when luck has it).

    python siamese_like.py [--epochs 1] [--steps 12] [--batch-size 16] [--test-batch-size 40]
"""

import argparse
import os

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

STRADDLE = 3  # the exit code of a span that outlived its profiler session


def watch_spans() -> None:
    """Stamp every record_function span with the profiler session it began in (None: none was
    recording); a span that ends while a different session records exits the process."""
    from torch.autograd import profiler as autograd_profiler
    from torch.profiler import profiler as torch_profiler

    sessions = [0]
    start_trace = torch_profiler._KinetoProfile.start_trace

    def counted_start(self):
        sessions[0] += 1
        return start_trace(self)

    torch_profiler._KinetoProfile.start_trace = counted_start
    enter, leave = autograd_profiler.record_function.__enter__, autograd_profiler.record_function.__exit__

    def stamped_enter(self):
        self._session = sessions[0] if autograd_profiler._is_profiler_enabled else None
        return enter(self)

    def checked_exit(self, *exc):
        began = getattr(self, "_session", None)
        if began is not None and autograd_profiler._is_profiler_enabled and sessions[0] != began:
            os.write(2, f"straddle: span {self.name!r} began under profiler session {began} and "
                        f"ended under session {sessions[0]}: torch writes its end into freed "
                        "memory\n".encode())
            os._exit(STRADDLE)
        return leave(self, *exc)

    autograd_profiler.record_function.__enter__ = stamped_enter
    autograd_profiler.record_function.__exit__ = checked_exit


class Siamese(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.trunk = nn.Sequential(
            nn.Conv2d(1, 8, 3, stride=2, padding=1, bias=False), nn.BatchNorm2d(8), nn.ReLU(),
            nn.Conv2d(8, 16, 3, stride=2, padding=1, bias=False), nn.BatchNorm2d(16), nn.ReLU(),
            nn.AdaptiveAvgPool2d(1))
        self.fc = nn.Sequential(nn.Linear(32, 16), nn.ReLU(inplace=True), nn.Linear(16, 1))

    def once(self, x):
        out = self.trunk(x)
        return out.view(out.size(0), -1)

    def forward(self, a, b):
        return torch.sigmoid(self.fc(torch.cat((self.once(a), self.once(b)), 1)))


def pairs(n: int, seed: int) -> TensorDataset:
    g = torch.Generator().manual_seed(seed)
    return TensorDataset(torch.rand(n, 1, 28, 28, generator=g), torch.rand(n, 1, 28, 28, generator=g),
                         (torch.rand(n, generator=g) > 0.5).float())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--steps", type=int, default=12, help="steps an epoch")
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--test-batch-size", type=int, default=40)
    parser.add_argument("--no-watch", action="store_true")
    args = parser.parse_args()
    if not args.no_watch:
        watch_spans()
    torch.manual_seed(1)
    train = DataLoader(pairs(args.steps * args.batch_size, 0), batch_size=args.batch_size)
    test = DataLoader(pairs(2 * args.test_batch_size, 1), batch_size=args.test_batch_size)
    model = Siamese()
    optimizer = torch.optim.Adadelta(model.parameters(), lr=1.0)
    for epoch in range(1, args.epochs + 1):
        model.train()
        for i, (a, b, target) in enumerate(train):
            optimizer.zero_grad()
            loss = F.binary_cross_entropy(model(a, b).squeeze(), target)
            loss.backward()
            optimizer.step()
            if i % 4 == 0:
                print(f"epoch {epoch} step {i} loss {loss.item():.6f}", flush=True)
        model.eval()
        correct = 0
        with torch.no_grad():
            for a, b, target in test:
                correct += int(((model(a, b).squeeze() > 0.5).float() == target).sum())
        print(f"test: {correct}/{len(test.dataset)}", flush=True)


if __name__ == "__main__":
    main()
