"""Convolutional autoencoder on synthetic 28x28 single-channel images; MSE reconstruction loss.

The kind of model in the write-up where splitting over 2 GPUs was slower than one: small
convolutions, so per-step overheads and launch latency dominate. Encoder 1x28x28 -> 32x14x14 ->
64x7x7 (strided convs), decoder back with transposed convs and a sigmoid. The images are smooth
random blobs (a 7x7 random grid upsampled), so there is something to learn; targets are the
inputs, batches are ``(x, x)``.

The image size is fixed at 28: ``cfg.image_size`` is ignored.
CPU defaults: batch 64, 200 steps. GPU defaults: batch 256, 500 steps.
"""

import torch
import torch.nn.functional as F
from torch import nn

from tuimon.recipe import Config, Recipe

IMAGE_SIZE = 28
NUM_BATCHES = 4

DEFAULTS = {
    "cpu": {"batch_size": 64, "image_size": IMAGE_SIZE, "steps": 200},
    "cuda": {"batch_size": 256, "image_size": IMAGE_SIZE, "steps": 500},
}


def _autoencoder() -> nn.Module:
    return nn.Sequential(
        nn.Conv2d(1, 32, 3, stride=2, padding=1),
        nn.ReLU(),
        nn.Conv2d(32, 64, 3, stride=2, padding=1),
        nn.ReLU(),
        nn.ConvTranspose2d(64, 32, 3, stride=2, padding=1, output_padding=1),
        nn.ReLU(),
        nn.ConvTranspose2d(32, 1, 3, stride=2, padding=1, output_padding=1),
        nn.Sigmoid(),
    )


def build(cfg: Config) -> Recipe:
    torch.manual_seed(cfg.seed)
    model = _autoencoder().to(cfg.device)

    gen = torch.Generator().manual_seed(cfg.seed)
    batches = []
    for _ in range(NUM_BATCHES):
        grid = torch.rand(cfg.batch_size, 1, 7, 7, generator=gen)
        x = F.interpolate(grid, size=IMAGE_SIZE, mode="bilinear").to(cfg.device)
        batches.append((x, x))

    return Recipe(
        model=model,
        optimizer=torch.optim.AdamW(model.parameters(), lr=1e-3),
        loss_fn=nn.MSELoss(),
        batches=batches,
        name="conv_autoencoder",
    )
