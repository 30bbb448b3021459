"""``--set``: fixed knobs and axes, for recipes and scripts alike. No torch, no textual.

``--set key=value`` is a fixed knob: every run gets it (a recipe reads it as ``cfg.extra[key]``).
``--set key=a,b,c`` is an *axis*: one variant per value, in the product with modes and
precisions; the first value is the axis's baseline. A comma inside a value is written ``\\,``.

A script (``tuimon run -- CMD``) gets each knob in its command line where the command says
``{key}`` (``--set bs=32,64 -- python train.py --batch-size {bs}``), and as the environment
variable ``key`` when the command never says ``{key}`` (``--set OMP_NUM_THREADS=1,2``).
"""

from __future__ import annotations

import itertools
import re

from tuimon.fixes import AXIS as FIX_AXIS

Pairs = tuple[tuple[str, str], ...]  # a variant's axis values: ((key, value), ...) in axis order

SEPARATOR = " · "  # a label's axis values: "default/fp32 · width=512"
_UNSAFE = re.compile(r"[^A-Za-z0-9_.+]+")


def split_values(text: str) -> list[str]:
    """'a,b,c' -> ['a', 'b', 'c']; '\\,' is a comma inside a value."""
    parts, current, i = [], "", 0
    while i < len(text):
        if text[i] == "\\" and text[i + 1:i + 2] == ",":
            current, i = current + ",", i + 2
            continue
        if text[i] == ",":
            parts.append(current)
            current = ""
        else:
            current += text[i]
        i += 1
    return [*parts, current]


def parse_sets(items: list[str]) -> tuple[dict[str, str], dict[str, list[str]]]:
    """--set's KEY=VALUE items -> (fixed knobs, axes: key -> its values, the first the baseline).

    ValueError (one line) for a key given twice or an empty value in a list."""
    fixed: dict[str, str] = {}
    axes: dict[str, list[str]] = {}
    for item in items:
        key, _, text = item.partition("=")
        if key in fixed or key in axes:
            raise ValueError(f"--set {key} given twice: give its values as one list "
                             f"(--set {key}=a,b,c makes one variant per value)")
        values = split_values(text)
        if len(values) == 1:
            fixed[key] = values[0]
            continue
        if any(v == "" for v in values):
            raise ValueError(f"--set {item}: an empty value in the list")
        unique = list(dict.fromkeys(values))
        if len(unique) == 1:  # width=512,512: one value after all
            fixed[key] = unique[0]
        else:
            axes[key] = unique
    return fixed, axes


def combos(axes: dict[str, list[str]]) -> list[Pairs]:
    """Every combination of the axes' values, the baselines first (the first axis varies slowest)."""
    keys = list(axes)
    return [tuple(zip(keys, values, strict=True)) for values in itertools.product(*axes.values())]


def baseline(axes: dict[str, list[str]]) -> dict[str, str]:
    return {key: values[0] for key, values in axes.items() if values}


def text(pairs: Pairs | dict[str, str]) -> str:
    """' · width=512 · depth=2' (empty without axes): what a label adds."""
    items = pairs.items() if isinstance(pairs, dict) else pairs
    return "".join(f"{SEPARATOR}{key}={value}" for key, value in items)


def id_part(pairs: Pairs) -> str:
    """'-width_512-depth_2': what a run id adds (file-system safe, short)."""
    out = "".join(f"-{_UNSAFE.sub('_', k)}_{_UNSAFE.sub('_', v)}" for k, v in pairs)
    return out if len(out) <= 60 else out[:60]


def for_script(command: list[str], values: dict[str, str]) -> tuple[list[str], dict[str, str]]:
    """A script's command with ``{key}`` replaced by each knob's value, and the environment
    variables for the knobs its command never names. The reserved ``fix`` axis is neither (the
    hooks apply it: tuimon/fixes.py)."""
    values = {key: value for key, value in values.items() if key != FIX_AXIS}
    named = {key for key in values if any("{" + key + "}" in word for word in command)}
    out = []
    for word in command:
        for key in named:
            word = word.replace("{" + key + "}", values[key])
        out.append(word)
    return out, {key: value for key, value in values.items() if key not in named}


def order_from(seen: list[dict[str, str]], declared: dict[str, list[str]] | None = None
               ) -> dict[str, list[str]]:
    """The axes in their declared order (the first value: the baseline), completed by values
    seen on runs and not declared (a variant added later), in the order they were seen."""
    out = {key: list(values) for key, values in (declared or {}).items()}
    for axes in seen:
        for key, value in axes.items():
            values = out.setdefault(key, [])
            if value not in values:
                values.append(value)
    return out
