"""Swin-T (torchvision, random init) on synthetic images, 10 classes: 27.5M params.

The small model of the seed write-up: on one V100 with AMP, compiling made the whole run
*slower* (11:46 eager vs 12:17 compiled), because compile time was not won back over few epochs.
Weights are never downloaded (``weights=None``). Swin pads to its 7x7 windows, so any image size
works, but keep it a multiple of 32 (4x patch embedding, then three 2x merges).

CPU defaults (~0.3 s a step on 2 cores): batch 8, 64x64, 40 steps.
GPU defaults: batch 64, 224x224, 200 steps.
"""

import torch
from torchvision.models import swin_t

from tuimon.recipe import Config, Recipe, image_batches

NUM_CLASSES = 10

DEFAULTS = {
    "cpu": {"batch_size": 8, "image_size": 64, "steps": 40},
    "cuda": {"batch_size": 64, "image_size": 224, "steps": 200},
}


def build(cfg: Config) -> Recipe:
    torch.manual_seed(cfg.seed)
    model = swin_t(weights=None, num_classes=NUM_CLASSES).to(cfg.device)
    return Recipe(
        model=model,
        optimizer=torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.05),
        loss_fn=torch.nn.CrossEntropyLoss(),
        batches=image_batches(cfg, NUM_CLASSES),
        name="swin_t",
    )
