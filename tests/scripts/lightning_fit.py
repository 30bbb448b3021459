"""A PyTorch Lightning project: a LightningModule (training/validation steps,
configure_optimizers returning Adam), a LightningDataModule, and Trainer.fit; Lightning owns the
loop, the optimizer.step() and the backward."""

import argparse

import lightning as L
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


class RandomDataModule(L.LightningDataModule):
    def __init__(self, batch_size: int = 32, n_train: int = 1024, n_val: int = 256):
        super().__init__()
        self.batch_size, self.n_train, self.n_val = batch_size, n_train, n_val

    def setup(self, stage=None):
        g = torch.Generator().manual_seed(0)
        x = torch.randn(self.n_train + self.n_val, 32, generator=g)
        y = (x @ torch.randn(32, 10, generator=g)).argmax(1)
        self.train_set = TensorDataset(x[:self.n_train], y[:self.n_train])
        self.val_set = TensorDataset(x[self.n_train:], y[self.n_train:])

    def train_dataloader(self):
        return DataLoader(self.train_set, batch_size=self.batch_size, shuffle=True, num_workers=0)

    def val_dataloader(self):
        return DataLoader(self.val_set, batch_size=128, num_workers=0)


class Classifier(L.LightningModule):
    def __init__(self, lr: float = 1e-3, hidden: int = 64):
        super().__init__()
        self.save_hyperparameters()
        self.net = nn.Sequential(nn.Linear(32, hidden), nn.ReLU(), nn.Linear(hidden, 10))

    def forward(self, x):
        return self.net(x)

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = nn.functional.cross_entropy(self(x), y)
        self.log("train_loss", loss, on_epoch=True)
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        logits = self(x)
        self.log("val_loss", nn.functional.cross_entropy(logits, y))
        self.log("val_acc", (logits.argmax(1) == y).float().mean())

    def on_validation_epoch_end(self):
        if self.trainer.sanity_checking:
            return
        m = self.trainer.callback_metrics
        print(f"epoch {self.current_epoch}: val_loss {m['val_loss']:.4f} val_acc {m['val_acc']:.3f}",
              flush=True)

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=self.hparams.lr)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=40)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    L.seed_everything(args.seed)
    trainer = L.Trainer(max_epochs=args.epochs, accelerator="cpu", devices=1, logger=False,
                        enable_checkpointing=False, enable_progress_bar=False,
                        enable_model_summary=False)
    trainer.fit(Classifier(lr=args.lr), datamodule=RandomDataModule(batch_size=args.batch_size))


if __name__ == "__main__":
    main()
