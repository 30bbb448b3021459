"""Variants: compile mode x precision x the values of ``--set`` axes (tuimon/axes.py). Parsed
and validated in the parent, no torch needed."""

from __future__ import annotations

from dataclasses import dataclass, replace

from tuimon import axes as axes_
from tuimon import fixes as fixes_

MODES = ("eager", "default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
# A mode with this suffix compiles the optimizer's step too (runner/compile_optimizer.py):
# "default+opt" races against "default" like any other variant; "eager+opt" compiles the
# optimizer alone.
OPT = "+opt"
PRECISIONS = ("fp32", "amp")
SCRIPT = "script"  # a script run's precision: whatever the script's own autocast makes it


@dataclass(frozen=True)
class Variant:
    mode: str
    precision: str
    axes: axes_.Pairs = ()  # ((key, value), ...) of the --set axes, in axis order

    @property
    def compiled(self) -> bool:
        return self.mode != "eager"

    @property
    def label(self) -> str:
        """'default/fp32', or with axes 'default/fp32 · width=512'."""
        return f"{self.mode}/{self.precision}{axes_.text(self.axes)}"

    @property
    def run_id(self) -> str:
        """File-system safe; a session's first run of this variant (later ones add -2, -3, ...)."""
        return f"{self.mode}-{self.precision}{axes_.id_part(self.axes)}"

    @property
    def axis_values(self) -> dict[str, str]:
        return dict(self.axes)

    @property
    def fixes(self) -> tuple[str, ...]:
        """The fixes ``tuimon try`` applies to it: its reserved axis ``fix`` (tuimon/fixes.py)."""
        return fixes_.parse(self.axis_values.get(fixes_.AXIS, fixes_.NONE))

    def fields(self) -> dict:
        """What events and the control socket say of it: mode, precision, axes (when any)."""
        out: dict = {"mode": self.mode, "precision": self.precision}
        if self.axes:
            out["axes"] = dict(self.axes)
        return out

    @classmethod
    def from_fields(cls, d: dict) -> Variant:
        return cls(str(d["mode"]), str(d["precision"]),
                   tuple((str(k), str(v)) for k, v in (d.get("axes") or {}).items()))

    def but(self, **changes) -> Variant:
        """The same variant with another mode or precision (a key in the TUI)."""
        return replace(self, **changes)

    def with_fix(self, value: str) -> Variant:
        """The same variant with its fix axis set to ``value`` (the TUI's t): in the axis's place
        when it has one, else last."""
        pairs = dict(self.axes)
        pairs[fixes_.AXIS] = value
        return replace(self, axes=tuple(pairs.items()))


def parse_list(text: str, allowed: tuple[str, ...], what: str) -> list[str]:
    """'eager, default' -> ['eager', 'default']; ValueError with one line on anything unknown."""
    items = [item.strip() for item in text.split(",") if item.strip()]
    if not items:
        raise ValueError(f"no {what} given")
    for item in items:
        if item not in allowed:
            raise ValueError(f"unknown {what} {item!r} (choose from {', '.join(allowed)})")
    return list(dict.fromkeys(items))  # drop repeats, keep order


def model_mode(mode: str) -> str:
    """The mode the model is compiled with ('default+opt' -> 'default')."""
    return mode.removesuffix(OPT)


def compiles_optimizer(mode: str) -> bool:
    return mode.endswith(OPT)


def parse_modes(text: str, compile_optimizer: bool = False) -> list[str]:
    """--modes: MODES, each maybe with +opt; ``compile_optimizer`` (--compile-optimizer) adds the
    +opt twin of every compiled mode given (of eager when none is), right after it."""
    for item in (i.strip() for i in text.split(",")):
        if item and model_mode(item) not in MODES:
            raise ValueError(f"unknown mode {item!r} (choose from {', '.join(MODES)}; MODE{OPT} "
                             "compiles the optimizer step too)")
    modes = parse_list(text, MODES + tuple(m + OPT for m in MODES), "mode")
    if compile_optimizer:
        compiled = [m for m in modes if m != "eager" and not compiles_optimizer(m)] or ["eager"]
        out = []
        for m in modes:
            out.append(m)
            if m in compiled and m + OPT not in modes:
                out.append(m + OPT)
        modes = out
    return modes


def product(modes: list[str], precisions: list[str],
            axes: dict[str, list[str]] | None = None) -> list[Variant]:
    """Per precision, per combination of axis values (the baselines first), every mode: each
    compiled variant comes after the eager run it is compared with. The fix axis (tuimon try)
    is the compiled modes' alone when there are some: eager runs once, at the axis's baseline,
    the baseline of every fix (stats/compare.py)."""
    fix_home = (axes or {}).get(fixes_.AXIS, [None])[0]
    compiled = any(m != "eager" for m in modes)
    return [Variant(m, p, combo) for p in precisions for combo in axes_.combos(axes or {})
            for m in modes
            if not (compiled and m == "eager" and dict(combo).get(fixes_.AXIS, fix_home) != fix_home)]


def choices(shown: set[Variant], focused: Variant | None, axes: dict[str, list[str]],
            script: bool = False) -> list[Variant]:
    """What the TUI's ``n`` offers: every variant not shown, the focused panel's precision and
    axis values first, then its other axis values, then the other precision; when every one is
    shown, another run of the focused one."""
    precisions = [focused.precision] if focused else ([SCRIPT] if script else [])
    if SCRIPT not in precisions:  # a script's variants differ in compile mode alone
        precisions += [p for p in PRECISIONS if p not in precisions]
    combos = axes_.combos(axes)
    if focused is not None and focused.axes in combos:
        combos.remove(focused.axes)
        combos.insert(0, focused.axes)
    out = [Variant(m, p, c) for p in precisions for c in combos for m in MODES]
    return [v for v in out if v not in shown] or [focused or Variant("eager", precisions[0])]
