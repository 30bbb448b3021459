"""Trainings one after another, as a knowledge-distillation script runs them: a teacher trained
with its optimizer, then students (each a new model and a new optimizer) trained against the
frozen teacher's no-grad outputs: two of one class, then two of another (simplest_kd's
StudentCnn, StudentCnn, StudentMLP, StudentMLP). tuimon finds each new training's model and, in a
compiled variant, compiles it; the teacher compiled in the first training is still called.
Prints how many steps each training did."""

import argparse

import torch
from torch import nn
from torch.nn import functional as F


class Teacher(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU())
        self.head = nn.Linear(64, 10)

    def forward(self, x):
        return self.head(self.body(x))


class Student(nn.Module):
    def __init__(self, width: int = 16) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Linear(32, width), nn.ReLU())
        self.head = nn.Linear(width, 10)

    def forward(self, x):
        return self.head(self.body(x))


class WideStudent(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Linear(32, 48), nn.Tanh(), nn.Linear(48, 24), nn.Tanh())
        self.head = nn.Linear(24, 10)

    def forward(self, x):
        return self.head(self.body(x))


def train(model, steps: int, x, y, teacher=None) -> None:
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    for _ in range(steps):
        optimizer.zero_grad()
        out = model(x)
        loss = F.cross_entropy(out, y)
        if teacher is not None:
            with torch.no_grad():
                soft = F.softmax(teacher(x) / 2, dim=1)
            loss = loss + F.kl_div(F.log_softmax(out / 2, dim=1), soft, reduction="batchmean")
        loss.backward()
        optimizer.step()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=10, help="each training's")
    args = parser.parse_args()
    torch.manual_seed(0)
    x, y = torch.randn(64, 32), torch.randint(0, 10, (64,))
    teacher = Teacher()
    train(teacher, args.steps, x, y)
    print(f"teacher trained: {args.steps} steps", flush=True)
    teacher.eval()
    for k, kind in enumerate((Student, Student, WideStudent, WideStudent)):
        train(kind(), args.steps, x, y, teacher)
        print(f"student {k + 1} ({kind.__name__}) trained: {args.steps} steps", flush=True)


if __name__ == "__main__":
    main()
