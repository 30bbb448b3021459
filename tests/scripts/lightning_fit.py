"""A Lightning project: a LightningModule, DataLoaders, Trainer.fit with a validation loop."""

import argparse

import lightning as L
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


class Classifier(L.LightningModule):
    def __init__(self, lr: float):
        super().__init__()
        self.lr = lr
        self.net = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 10))

    def forward(self, x):
        return self.net(x)

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = nn.functional.cross_entropy(self(x), y)
        self.log("train_loss", loss)
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        self.log("val_loss", nn.functional.cross_entropy(self(x), y))

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=self.lr)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--epochs", type=int, default=20)
    p.add_argument("--lr", type=float, default=1e-3)
    args = p.parse_args()
    L.seed_everything(0)
    x, y = torch.randn(1280, 32), torch.randint(0, 10, (1280,))
    train = DataLoader(TensorDataset(x[:1024], y[:1024]), batch_size=32, shuffle=True)
    val = DataLoader(TensorDataset(x[1024:], y[1024:]), batch_size=64)
    trainer = L.Trainer(max_epochs=args.epochs, accelerator="cpu", devices=1, logger=False,
                        enable_checkpointing=False, enable_progress_bar=False,
                        enable_model_summary=False)
    trainer.fit(Classifier(args.lr), train, val)


if __name__ == "__main__":
    main()
