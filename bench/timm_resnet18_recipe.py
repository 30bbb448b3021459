"""timm resnet18 (random init) trained exactly as timm's ``benchmark.py --bench train`` trains it.

A bench-only recipe for bench/timm_agreement.py (issue 14): the same work as
``benchmark.py --bench train --model resnet18 --img-size 96 -b 16 --device cpu``:

- ``timm.create_model("resnet18")``: 1000 classes, global average pool, no dropout;
- ``timm.optim.create_optimizer_v2(model, opt="sgd", lr=1e-4)``: that is ``torch.optim.SGD`` with
  momentum 0.9, **nesterov=True**, weight decay 0 (timm's "sgd" is Nesterov SGD);
- ``torch.nn.CrossEntropyLoss()`` (benchmark.py does not pass its ``--smoothing`` to the loss);
- fp32, NCHW, train mode.

benchmark.py feeds one fixed input tensor and draws new targets each step; this recipe cycles 4
fixed seeded (inputs, targets) batches (tuimon's ``image_batches``): the same shapes, the same work.

``--set opt=plain`` swaps in ``SGD(lr=1e-4)`` (no momentum), ``--set classes=N`` another head:
only for measuring what those choices cost.

Run: ``.venv/bin/python -m tuimon bench/timm_resnet18_recipe.py --headless --modes eager``
"""

import timm
import torch

from tuimon.recipe import Config, Recipe, image_batches

DEFAULTS = {
    "cpu": {"batch_size": 16, "image_size": 96, "steps": 30},
    "cuda": {"batch_size": 256, "image_size": 224, "steps": 50},
}


def build(cfg: Config) -> Recipe:
    torch.manual_seed(cfg.seed)
    classes = int(cfg.extra.get("classes", 1000))
    model = timm.create_model("resnet18", pretrained=False, num_classes=classes).to(cfg.device)
    if cfg.extra.get("opt", "timm") == "plain":
        optimizer = torch.optim.SGD(model.parameters(), lr=1e-4)
    else:  # what timm's create_optimizer_v2(model, opt="sgd", lr=1e-4) builds
        optimizer = torch.optim.SGD(model.parameters(), lr=1e-4, momentum=0.9, nesterov=True,
                                    weight_decay=0.0)
    return Recipe(
        model=model,
        optimizer=optimizer,
        loss_fn=torch.nn.CrossEntropyLoss(),
        batches=image_batches(cfg, classes),
        name="timm_resnet18",
    )
