"""A script that trains, then dies on a corrupt record: a check raises a ValueError (--color: red)."""
import argparse

import torch


def check_batch(x, epoch, step):
    if not torch.isfinite(x).all():
        raise ValueError(PAINT.format(f"bad batch at epoch {epoch} step {step}"))
    return x


PAINT = "{}"  # --color: bold red, as a coloured logger or a rich traceback writes an error


def train_epoch(model, optimizer, x, y, epoch, batch_size):
    for step, k in enumerate(range(0, len(x), batch_size)):
        xb = check_batch(x[k:k + batch_size], epoch, step)
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(xb), y[k:k + batch_size])
        loss.backward()
        optimizer.step()
    return loss.item()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--color", action="store_true")
    args = parser.parse_args()
    if args.color:
        global PAINT
        PAINT = "\x1b[1m\x1b[31m{}\x1b[0m"

    x = torch.randn(1024, 32)
    y = torch.randint(0, 10, (1024,))
    x[7 * 32 + 5, 3] = float("nan")  # one corrupt record, in the 8th batch of 32
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 10))
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr)
    for epoch in range(args.epochs):
        loss = train_epoch(model, optimizer, x, y, epoch, args.batch_size)
        print(f"epoch {epoch}: loss {loss:.4f}", flush=True)


if __name__ == "__main__":
    main()
