"""ConvNeXt-Large (torchvision, random init) on synthetic images, 10 classes: 196M params.

The biggest model of the seed write-up: on one V100 with AMP, torch.compile made it only ~6 %
faster, and FP32 compile threw many warnings. Weights are never downloaded (``weights=None``).

CPU defaults are tiny so a step stays around a second on 2 cores (batch 4, 64x64, 20 steps);
GPU defaults are realistic (batch 64, 224x224, 200 steps).
"""

import torch
from torchvision.models import convnext_large

from tuimon.recipe import Config, Recipe, image_batches

NUM_CLASSES = 10

DEFAULTS = {
    "cpu": {"batch_size": 4, "image_size": 64, "steps": 20},
    "cuda": {"batch_size": 64, "image_size": 224, "steps": 200},
}


def build(cfg: Config) -> Recipe:
    torch.manual_seed(cfg.seed)
    model = convnext_large(weights=None, num_classes=NUM_CLASSES).to(cfg.device)
    return Recipe(
        model=model,
        optimizer=torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.05),
        loss_fn=torch.nn.CrossEntropyLoss(),
        batches=image_batches(cfg, NUM_CLASSES),
        name="convnext_large",
    )
