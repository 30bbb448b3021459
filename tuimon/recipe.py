"""The recipe contract: what a recipe file defines, and how the runner loads it.

A recipe is a plain Python file with a top-level ``build(cfg) -> Recipe``. The runner owns
everything else (loop, compile mode, precision, seeding, timing, events), so every recipe gets
every feature for free. Optionally a recipe defines ``DEFAULTS = {"cpu": {...}, "cuda": {...}}``
with CPU- and GPU-sized values for ``batch_size``, ``image_size`` and ``steps``; command-line
overrides win over them.

This module is imported by recipe files and by the runner (child side). It does not import torch
at import time, so the parent may import it for ``Config`` and ``find_build`` alone.
"""

from __future__ import annotations

import ast
import importlib.util
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tuimon.settings import MODE, PRECISION, SEED

# Used when a recipe's DEFAULTS says nothing about a knob and the command line is silent too.
FALLBACK_DEFAULTS = {
    "cpu": {"batch_size": 16, "image_size": 64, "steps": 50},
    "cuda": {"batch_size": 64, "image_size": 224, "steps": 200},
}


class RecipeError(Exception):
    """A recipe file that cannot be used; the message is one line naming the file and the fault."""


class Extra(dict):
    """``cfg.extra``: the --set knobs, as strings; it notes which ones the recipe read, so a
    knob that no recipe reads (a typo) is said rather than silently raced as identical runs."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.read: set[str] = set()

    def __getitem__(self, key):
        self.read.add(key)
        return super().__getitem__(key)

    def get(self, key, default=None):
        self.read.add(key)
        return super().get(key, default)

    def __contains__(self, key) -> bool:
        self.read.add(key)
        return super().__contains__(key)

    def __iter__(self):
        self.read.update(self.keys())  # a recipe that looks at every knob read them all
        return super().__iter__()

    def items(self):
        self.read.update(self.keys())
        return super().items()

    def unread(self) -> list[str]:
        return [key for key in self.keys() if key not in self.read]


@dataclass
class Config:
    """What a recipe's ``build`` receives. Sizes are already resolved (override > DEFAULTS)."""

    device: str  # "cpu", "cuda", "cuda:1", ...
    batch_size: int
    image_size: int
    seed: int = SEED
    extra: dict[str, str] = field(default_factory=dict)  # --set key=value pairs, as strings
    # Which variant this process runs, for a recipe that must know (tuimon applies both itself).
    mode: str = MODE
    precision: str = PRECISION

    @property
    def on_cuda(self) -> bool:
        return self.device.startswith("cuda")


@dataclass
class Recipe:
    """What ``build`` returns.

    ``batches`` yields ``(inputs, targets)`` pairs; the runner moves them to the device and
    cycles the iterable when it ends. Make them deterministic from ``cfg.seed`` so every variant
    trains on the same data. ``loss_fn(outputs, targets)`` gives a scalar tensor. A recipe whose
    step is not ``loss_fn(model(inputs), targets)`` sets ``forward_loss(model, inputs, targets)``.
    """

    model: Any
    optimizer: Any
    loss_fn: Callable[..., Any] | None
    batches: Iterable[Any]
    name: str = ""
    forward_loss: Callable[..., Any] | None = None
    samples_per_batch: int | None = None  # defaults to len(inputs)


def resolve_defaults(recipe_defaults: dict | None, device: str) -> dict[str, int]:
    """Merge a recipe's DEFAULTS for this device kind over the fallbacks."""
    kind = "cuda" if device.startswith("cuda") else "cpu"
    merged = dict(FALLBACK_DEFAULTS[kind])
    merged.update((recipe_defaults or {}).get(kind, {}))
    return merged


def check_recipe_file(path: str | Path) -> Path:
    """Cheap checks the parent can do without importing torch: exists, is Python, has ``build``.

    Raises RecipeError with a one-line message.
    """
    p = Path(path)
    if not p.exists():
        raise RecipeError(f"recipe not found: {p}")
    if not p.is_file():
        raise RecipeError(f"recipe is not a file: {p}")
    if p.suffix != ".py":
        raise RecipeError(f"recipe must be a Python file (.py): {p}")
    try:
        source = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise RecipeError(f"cannot read recipe {p}: {exc}") from None
    try:
        tree = ast.parse(source, filename=str(p))
    except SyntaxError as exc:
        raise RecipeError(f"recipe {p} has a syntax error at line {exc.lineno}: {exc.msg}") from None
    if not any(
        isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Assign)) and _defines_build(node)
        for node in tree.body
    ):
        raise RecipeError(f"recipe {p} does not define build(cfg)")
    return p.resolve()


def _defines_build(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Assign) -> bool:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return node.name == "build"
    return any(isinstance(t, ast.Name) and t.id == "build" for t in node.targets)


def load_module(path: str | Path):
    """Import a recipe file as a module (child side: this runs the recipe's imports)."""
    p = Path(path)
    spec = importlib.util.spec_from_file_location(f"tuimon_recipe_{p.stem}", p)
    if spec is None or spec.loader is None:
        raise RecipeError(f"cannot import recipe {p}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    if not callable(getattr(module, "build", None)):
        raise RecipeError(f"recipe {p} does not define build(cfg)")
    return module


def validate(recipe: Any, path: str | Path) -> Recipe:
    """Check what ``build`` returned, with one-line messages for each fault."""
    if not isinstance(recipe, Recipe):
        raise RecipeError(
            f"recipe {path}: build(cfg) must return tuimon.recipe.Recipe, got {type(recipe).__name__}"
        )
    import torch  # child side only

    if not isinstance(recipe.model, torch.nn.Module):
        raise RecipeError(f"recipe {path}: Recipe.model must be a torch.nn.Module")
    if not isinstance(recipe.optimizer, torch.optim.Optimizer):
        raise RecipeError(f"recipe {path}: Recipe.optimizer must be a torch.optim.Optimizer")
    if recipe.loss_fn is None and recipe.forward_loss is None:
        raise RecipeError(f"recipe {path}: Recipe needs loss_fn or forward_loss")
    if recipe.forward_loss is None and not callable(recipe.loss_fn):
        raise RecipeError(f"recipe {path}: Recipe.loss_fn must be callable")
    if not hasattr(recipe.batches, "__iter__"):
        raise RecipeError(f"recipe {path}: Recipe.batches must be iterable")
    return recipe


def image_batches(cfg: Config, num_classes: int, *, channels: int = 3, count: int = 4) -> list:
    """``count`` fixed synthetic (images, labels) batches on ``cfg.device``, seeded by ``cfg.seed``.

    Made once and cycled by the runner, so data loading costs nothing and every variant sees the
    same batches in the same order.
    """
    import torch

    gen = torch.Generator().manual_seed(cfg.seed)
    size = (cfg.batch_size, channels, cfg.image_size, cfg.image_size)
    return [
        (
            torch.randn(size, generator=gen).to(cfg.device),
            torch.randint(0, num_classes, (cfg.batch_size,), generator=gen).to(cfg.device),
        )
        for _ in range(count)
    ]
