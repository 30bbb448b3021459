"""The fixes ``tuimon try`` races (issue 34): each a change tuimon applies from outside, with no
edit to the user's files. A leaf, as ``variants.py``: no torch, no textual; the CLI picks fixes
here and the child (runner/fixes.py for a recipe, runner/script/ for a script) applies the names
it is handed in its settings (``RunSettings.fixes``).

A fix rides on a variant as the reserved axis ``fix`` (``default/fp32 · fix=regional``), so the
axes' machinery races it against the same variant without it (``fix=none``, the axis baseline),
rounds paired, and words its speedup with an interval. Several fixes at once (the winners raced
together) are joined by ``+``: ``fix=regional+dynamic``.

What a fix answers is named by the Why codes it follows (analysis/why/): a finding whose code
starts with one of ``answers`` suggests it.
"""

from __future__ import annotations

from dataclasses import dataclass

AXIS = "fix"  # the reserved axis key: never a --set key
OPT = "+opt"  # variants.OPT (variants imports axes; this leaf imports nothing of tuimon)
NONE = "none"  # the axis baseline: the variant as the session ran it
JOIN = "+"


@dataclass(frozen=True)
class Fix:
    name: str
    title: str  # what it does, in a few words ("regional compilation")
    answers: tuple[str, ...]  # Why code prefixes it follows
    compiled_only: bool = True  # changes how a compiled variant compiles (none on eager)
    cuda_only: bool = False
    recipe: bool = True  # applies to a recipe run
    script: bool = True  # applies to a script run
    mode: str | None = None  # the fix is another compile mode (raced as that mode)
    precision: str | None = None  # ... or another precision
    # What it answers is the script's, not the variant's (one DataLoader feeds every variant):
    # a finding on any row of the session calls for it, not only the base's
    shared: bool = False


FIXES: dict[str, Fix] = {f.name: f for f in (
    Fix("regional", "regional compilation (each repeated block compiled, not the whole model)",
        ("payoff.", "fallback.compile_part")),
    Fix("dynamic", "dynamic shapes (torch.compile(dynamic=True))", ("recompiles.",)),
    Fix("scalars", "scalar outputs captured (capture_scalar_outputs, "
        "capture_dynamic_output_shape_ops)", ("syncs.capture_scalar", "breaks.", "outside.reads",
                                              "outside.read_every")),
    Fix("opt", "the optimizer's step compiled (+opt)", ("bound.optimizer", "bound.race_optimizer",
                                                         "bound.compile_optimizer")),
    Fix("foreach", "a foreach / fused optimizer (fused on CUDA)", ("bound.optimizer",),
        compiled_only=False),
    Fix("loader", "more DataLoader workers (sized to the cores; pinned memory on CUDA)",
        ("bound.input", "bound.loader", "bound.wait"), compiled_only=False, recipe=False,
        shared=True),
    Fix("amp", "autocast to bf16", ("bound.compute", "bound.kernels"), compiled_only=False,
        precision="amp"),
    Fix("tf32", "TF32 matmuls for fp32", ("bound.compute", "bound.kernels"), compiled_only=False,
        cuda_only=True),
    Fix("no-cudagraphs", "max-autotune-no-cudagraphs (CUDA graphs were skipped)",
        ("cudagraphs.skipped",), cuda_only=True, mode="max-autotune-no-cudagraphs"),
    Fix("reduce-overhead", "reduce-overhead (CUDA graphs: fewer launches)",
        ("bound.launch", "bound.reduce_overhead"), cuda_only=True, mode="reduce-overhead"),
    Fix("max-autotune", "max-autotune (GEMMs tuned)", ("ops.gemm", "bound.compute"),
        cuda_only=True, mode="max-autotune"),
    Fix("channels-last", "channels_last memory format (convolutions)", ("bound.compute",
                                                                          "ops.gemm"),
        compiled_only=False, script=False),
)}


def parse(text: str) -> tuple[str, ...]:
    """'regional+dynamic' -> ('regional', 'dynamic'); 'none' -> (). ValueError (one line) for a
    name that is no fix."""
    if text in ("", NONE):
        return ()
    names = tuple(text.split(JOIN))
    unknown = [n for n in names if n not in FIXES]
    if unknown:
        raise ValueError(f"no fix named {', '.join(unknown)} (fixes: {', '.join(FIXES)})")
    return names


def plain(axes: dict[str, str]) -> dict[str, str]:
    """A row's axis values as the comparisons match them: ``fix=none`` is no fix at all, so a
    variant run without the axis (a session before ``tuimon try``, or beside a fix the TUI added)
    is the baseline of its fixes."""
    return {k: v for k, v in axes.items() if not (k == AXIS and v == NONE)}


def join(names) -> str:
    return JOIN.join(names) if names else NONE


def cannot(fix: Fix, *, on_cuda: bool, is_script: bool, compiled: bool) -> str | None:
    """Why ``fix`` cannot apply to this variant, known before it runs; None when it may (the
    child may still find it cannot: "no repeated block", "no DataLoader")."""
    if fix.cuda_only and not on_cuda:
        return "CUDA only"
    if is_script and not fix.script:
        return "recipes only"
    if not is_script and not fix.recipe:
        return "scripts only (a recipe's batches are in memory)"
    if fix.compiled_only and not compiled:
        return "a compiled variant's only"
    return None


def asked(fixes: tuple[str, ...], axes, knobs=()) -> tuple[str, ...]:
    """The fixes a run applies: its variant's ``fix`` axis value where it has one (each variant
    its own: the plan's settings are shared by every run), else a fixed ``--set fix=NAME`` knob
    (one value is a knob, not an axis), else ``RunSettings.fixes``."""
    value = dict(axes).get(AXIS, dict(knobs).get(AXIS))
    return parse(value) if value is not None else tuple(fixes)


def without_axis(pairs) -> tuple[tuple[str, str], ...]:
    """--set pairs without the reserved ``fix`` axis: never a recipe's cfg.extra knob, never a
    script's {KEY} or environment variable (the child gets it as its settings' fixes)."""
    return tuple((k, v) for k, v in (pairs.items() if isinstance(pairs, dict) else pairs)
                 if k != AXIS)


def variant_under(mode: str, precision: str, names, *, on_cuda: bool,
                  is_script: bool) -> tuple[str, str]:
    """The (mode, precision) a run trains with under ``names``: a mode fix's mode for the
    model's (``opt`` keeps or adds ``+opt``), ``amp``'s precision for a recipe (a script's
    autocast is applied by its hooks instead). A fix that cannot apply changes nothing."""
    compiled = mode.removesuffix(OPT) != "eager"
    model, opt = mode.removesuffix(OPT), mode.endswith(OPT)
    for name in names:
        fix = FIXES[name]
        if cannot(fix, on_cuda=on_cuda, is_script=is_script, compiled=compiled):
            continue
        if fix.mode:
            model = fix.mode
        if name == "opt":
            opt = True
        if fix.precision and not is_script:
            precision = fix.precision
    return model + (OPT if opt else ""), precision


def suggested(codes) -> list[str]:
    """The fixes the findings' codes suggest, in the registry's order."""
    codes = list(codes)
    return [name for name, fix in FIXES.items()
            if any(code.startswith(prefix) for code in codes for prefix in fix.answers)]
