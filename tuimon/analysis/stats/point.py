"""What a rule decided, as data: a ``Point`` is a code and the figures its words need. The
statistics, the verdict and the Why rules return points (a reason a comparison cannot be trusted,
a finding's evidence, what to try); ``tuimon.report`` turns each code into the sentence users
read, in one place. Nothing here is worded, and no rule reads another's words: it reads codes."""

from __future__ import annotations

from dataclasses import dataclass, field, fields, is_dataclass
from typing import Any


@dataclass(frozen=True)
class Point:
    code: str
    figures: dict[str, Any] = field(default_factory=dict)

    def __hash__(self) -> int:  # figures hold lists and dicts: points are kept once by value
        return hash((self.code, repr(sorted(self.figures.items()))))

    def get(self, key: str, default: Any = None) -> Any:
        return self.figures.get(key, default)

    def to_dict(self) -> dict:
        """Plain JSON: its code beside its figures, points among them as dicts too."""
        return {"code": self.code, **{k: plain(v) for k, v in self.figures.items()}}


def plain(x: Any) -> Any:
    """Plain JSON of points, records (dataclasses, nested as they are) and what holds them."""
    if isinstance(x, Point):
        return x.to_dict()
    if is_dataclass(x) and not isinstance(x, type):
        return {f.name: plain(getattr(x, f.name)) for f in fields(x)}
    if isinstance(x, dict):
        return {k: plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [plain(v) for v in x]
    return x


def point(code: str, **figures: Any) -> Point:
    return Point(code, figures)


def codes(points) -> set[str]:
    return {p.code for p in points}
