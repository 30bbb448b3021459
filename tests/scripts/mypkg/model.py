"""The model definition, imported by train.py as ``from .model import build_model``."""

from torch import nn


class MLP(nn.Module):
    def __init__(self, in_dim: int = 32, width: int = 64, classes: int = 10):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(in_dim, width), nn.ReLU())
        self.head = nn.Linear(width, classes)

    def forward(self, x):
        return self.head(self.body(x))


def build_model(cfg: dict) -> nn.Module:
    return MLP(width=cfg.get("width", 64))
