"""Variants: compile mode x precision. Parsed and validated in the parent, no torch needed."""

from __future__ import annotations

from dataclasses import dataclass

MODES = ("eager", "default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
PRECISIONS = ("fp32", "amp")
SCRIPT = "script"  # a script run's precision: whatever the script's own autocast makes it


@dataclass(frozen=True)
class Variant:
    mode: str
    precision: str

    @property
    def compiled(self) -> bool:
        return self.mode != "eager"

    @property
    def label(self) -> str:
        return f"{self.mode}/{self.precision}"

    @property
    def run_id(self) -> str:
        """File-system safe; a session's first run of this variant (later ones add -2, -3, ...)."""
        return f"{self.mode}-{self.precision}"


def parse_list(text: str, allowed: tuple[str, ...], what: str) -> list[str]:
    """'eager, default' -> ['eager', 'default']; ValueError with one line on anything unknown."""
    items = [item.strip() for item in text.split(",") if item.strip()]
    if not items:
        raise ValueError(f"no {what} given")
    for item in items:
        if item not in allowed:
            raise ValueError(f"unknown {what} {item!r} (choose from {', '.join(allowed)})")
    return list(dict.fromkeys(items))  # drop repeats, keep order


def product(modes: list[str], precisions: list[str]) -> list[Variant]:
    """Every precision's eager first, so each compiled variant has its baseline measured before."""
    return [Variant(m, p) for p in precisions for m in modes]
