"""timm VisionTransformer with ``patch_drop_rate=0.5`` on synthetic images (random init).

The seed write-up's profiler example: timm's patch dropout keeps a random half of the patch
tokens with ``torch.gather``; under ``torch.use_deterministic_algorithms(True)`` on CUDA most of
backward went to ``GatherBackward`` with a host<->device sync. Built directly from
``VisionTransformer`` (never ``timm.create_model(pretrained=...)``), so nothing is fetched.

Knobs (``--set key=value``):
  size=tiny|base   tiny: ViT-Ti (embed 192, 3 heads), patch 8 -- the CPU default;
                   base: ViT-B (embed 768, 12 heads), patch 16 -- the GPU default. Both depth 12.
  deterministic=1  call ``torch.use_deterministic_algorithms(True, warn_only=True)`` as the
                   write-up did (process-wide; warn_only so cuBLAS does not need an env var)
The image size must be a multiple of the patch size.
CPU defaults: batch 8, 64x64, 50 steps. GPU defaults: batch 64, 224x224, 200 steps.
"""

import torch
from timm.models.vision_transformer import VisionTransformer

from tuimon.recipe import Config, Recipe, image_batches

NUM_CLASSES = 10
SIZES = {
    "tiny": {"patch_size": 8, "embed_dim": 192, "depth": 12, "num_heads": 3},
    "base": {"patch_size": 16, "embed_dim": 768, "depth": 12, "num_heads": 12},
}

DEFAULTS = {
    "cpu": {"batch_size": 8, "image_size": 64, "steps": 50},
    "cuda": {"batch_size": 64, "image_size": 224, "steps": 200},
}


def build(cfg: Config) -> Recipe:
    size = cfg.extra.get("size", "base" if cfg.on_cuda else "tiny")
    if size not in SIZES:
        raise ValueError(f"vit_patchdrop: size must be one of {sorted(SIZES)}, got {size!r}")
    arch = SIZES[size]
    if cfg.image_size % arch["patch_size"]:
        raise ValueError(
            f"vit_patchdrop: image_size {cfg.image_size} is not a multiple of patch size {arch['patch_size']}"
        )
    if cfg.extra.get("deterministic", "0") == "1":
        torch.use_deterministic_algorithms(True, warn_only=True)

    torch.manual_seed(cfg.seed)
    model = VisionTransformer(
        img_size=cfg.image_size, num_classes=NUM_CLASSES, patch_drop_rate=0.5, **arch
    ).to(cfg.device)
    return Recipe(
        model=model,
        optimizer=torch.optim.AdamW(model.parameters(), lr=5e-4, weight_decay=0.05),
        loss_fn=torch.nn.CrossEntropyLoss(),
        batches=image_batches(cfg, NUM_CLASSES),
        name=f"vit_{size}_patchdrop",
    )
