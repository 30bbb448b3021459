"""Every recipe in recipes/ builds, validates, trains one eager step, and is deterministic.

Each recipe is built at a tiny size (batch 2, 32x32 images) once per module via a
module-scoped fixture, plus once more for the determinism check; the big torchvision models
(ConvNeXt-L ~196M params) dominate the run time, a few seconds each on 2 cores.
Network access is blocked while building, so no recipe can quietly download weights.
"""

import math
import socket
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from tuimon.recipe import Config, load_module, validate

RECIPE_DIR = Path(__file__).resolve().parents[2] / "recipes"
RECIPES = sorted(p for p in RECIPE_DIR.glob("*.py") if not p.name.startswith("_"))
KNOWN_DEFAULT_KEYS = {"batch_size", "image_size", "steps"}

pytestmark = pytest.mark.timeout(120)


def tiny_config() -> Config:
    # 32 is valid everywhere: a multiple of 32 for Swin/ConvNeXt, of the ViT patch size, and
    # ignored by the MLP and the autoencoder.
    return Config(device="cpu", batch_size=2, image_size=32, seed=0)


@pytest.fixture(scope="module", autouse=True)
def no_network():
    def refuse(*args, **kwargs):
        raise AssertionError("recipes must not touch the network")

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(socket.socket, "connect", refuse)
        mp.setattr(socket, "create_connection", refuse)
        mp.setattr(socket, "getaddrinfo", refuse)
        yield


def first_loss(recipe):
    """Loss of the recipe's first batch, the way the runner computes a step's loss."""
    inputs, targets = next(iter(recipe.batches))
    if recipe.forward_loss is not None:
        return recipe.forward_loss(recipe.model, inputs, targets)
    return recipe.loss_fn(recipe.model(inputs), targets)


def build_tiny(path: Path):
    module = load_module(path)
    recipe = validate(module.build(tiny_config()), path)
    # Right after build, so the global RNG (dropout, stochastic depth, patch dropout) is in the
    # same state for every build with the same seed.
    return module, recipe, first_loss(recipe)


@pytest.fixture(scope="module", params=RECIPES, ids=lambda p: p.stem)
def built(request):
    module, recipe, loss = build_tiny(request.param)
    return SimpleNamespace(path=request.param, module=module, recipe=recipe, loss=loss)


def test_recipes_found():
    assert len(RECIPES) >= 6, [p.name for p in RECIPES]


@pytest.mark.parametrize("path", RECIPES, ids=lambda p: p.stem)
def test_defaults_are_ints(path):
    defaults = getattr(load_module(path), "DEFAULTS", None)
    if defaults is None:
        return
    assert set(defaults) <= {"cpu", "cuda"}, defaults
    for kind, values in defaults.items():
        assert set(values) <= KNOWN_DEFAULT_KEYS, (kind, values)
        for key, value in values.items():
            assert type(value) is int and value > 0, (kind, key, value)


def test_has_name_and_docstring(built):
    assert built.recipe.name
    assert (built.module.__doc__ or "").strip()


def test_one_eager_training_step(built):
    recipe, loss = built.recipe, built.loss
    assert loss.dim() == 0 and math.isfinite(loss.item())
    last = list(recipe.model.parameters())[-1]  # the output layer's; cheap to copy
    before = last.detach().clone()
    recipe.optimizer.zero_grad(set_to_none=True)
    loss.backward()
    assert last.grad is not None and torch.isfinite(last.grad).all()
    recipe.optimizer.step()
    assert not torch.equal(before, last), "optimizer.step() did not move the output layer"


def test_same_seed_same_batches_and_loss(built):
    _, again, loss = build_tiny(built.path)
    for (x1, y1), (x2, y2) in zip(built.recipe.batches, again.batches, strict=True):
        assert torch.equal(x1, x2) and torch.equal(y1, y2)
    assert torch.equal(built.loss.detach(), loss.detach())
