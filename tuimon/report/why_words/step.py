"""The words of what bounds a step (analysis/why/bound.py: input-, launch-, optimizer-bound, where
the step goes and what compile did to each phase): one entry a code, a function of its figures."""

from __future__ import annotations

from tuimon.fmt import fmt_ms, fmt_ratio
from tuimon.report.untold_text import untold_text
from tuimon.report.why_words.compiled import fixed, span_text


def _split(split: list) -> str:
    return " · ".join(f"{n} {share:.0%}" for n, share in split)


def _launch(f: dict) -> str:
    idle = f"{f['idle']:.0%}" if f["idle"] is not None else f"{100 - f['util']:.0f} %"
    return f"launch-bound: the GPU idles {idle} of the step, waiting for the host"


def _wait(f: dict) -> str:
    text = (f"{f['label']} waits {fmt_ms(f['wait'])} for its batch in a {fmt_ms(f['step'])} step "
            f"({f['share']:.0%})")
    if f["timeline"]:
        text += ": on the GPU's timeline, the wait it could not hide behind earlier work"
    return text


RACED = {"pays": "compiling the optimizer step pays", "not_here": "it does not pay here",
         "noise": "no gain beyond noise"}


def _raced(f: dict) -> str:
    text = f"{f['with_opt']} (its optimizer step compiled too) raced {f['without']}: "
    if f["optimizer"] is not None:
        text += f"optimizer {f['optimizer']:.2f}× faster, "
    if f.get("untold") is not None:  # no figure: its interval holds every answer
        return text + f"the whole step {untold_text(f['untold'])}"
    text += f"the whole step {f['step']:.2f}×"
    if f["answer"] is not None:
        text += f" (95 % CI {f['lo']:.2f}–{f['hi']:.2f}): {RACED[f['answer']]}"
    return text


def _ratio(f: dict) -> str:
    """A phase's speedup with its interval, or why it cannot be told."""
    return untold_text(f["untold"]) if f.get("untold") is not None else fmt_ratio(*f["ratio"])


def _optimizer_vs(f: dict) -> str:
    text = (f"against {f['base']}: optimizer's median {fmt_ms(f['before'])} → {fmt_ms(f['after'])} "
            f"({_ratio(f)})")
    return text + ("" if f["compiled"] else ": torch.compile compiles the model's forward and backward, not "
                   "optimizer.step(), unless asked")


FUSED = "a fused or foreach optimizer: torch.optim.AdamW(..., fused=True) on CUDA, foreach=True"

TIPS = {  # the words that take no figure
    "bound.model_only": "compile speeds up the model only: a step cannot get shorter than its wait for data",
    "bound.loader": (
        "DataLoader(num_workers=N, pin_memory=True, persistent_workers=True, prefetch_factor=4); augmentation"
        " on the GPU; a cached or pre-decoded data set"),
    "bound.reduce_overhead": "mode reduce-overhead replays each graph as one CUDA graph launch",
    "bound.batch": "a larger batch gives every kernel more work for the same launches",
    "bound.host_ops": (
        "fewer host-side operations a step: hooks, logging, scalar reads, Python loops over tensors"),
    "bound.optimizer_kept": (
        "torch.compile of the model leaves optimizer.step() as it is: a compiled variant keeps this part "
        "unless it compiles the optimizer step too"),
    "bound.by_hand": "or compile it by hand: a function that calls opt.step(), under torch.compile",
    "bound.race_compiled": (
        "forward and backward are what torch.compile speeds up: "
        "race a compiled mode (--modes eager,default)"),
}

WORDS = {
    "bound.input": lambda f: f"input-bound: {f['share']:.0%} of each step waits for data",
    "bound.wait": _wait,
    "bound.base_wait": lambda f: (f"{f['label']}: {fmt_ms(f['wait'])} of {fmt_ms(f['step'])} "
                                  f"({f['share']:.0%})"),
    "bound.same_wait": lambda f: (f"compile made the rest of the step shorter ({fmt_ms(f['before'])} → "
                                  f"{fmt_ms(f['after'])}) but not the wait: a faster step waiting on the "
                                  f"same loader, {f['share']:.0%} of it now against {f['base_share']:.0%} in "
                                  f"{f['base']}"),
    "bound.launch": _launch,
    "bound.kernels": lambda f: (f"the GPU ran kernels {fmt_ms(f['busy_ms'])} of a {fmt_ms(f['step_ms'])} "
                                f"step: idle {f['idle']:.0%} ({span_text(f['steps'])})"),
    "bound.util": lambda f: f"GPU utilisation (NVML) {f['util']:.0f} % on average",
    "bound.gap": lambda f: (f"{f['share']:.0%} of the step on the GPU's timeline falls between its phases "
                            "(other): time the GPU waited for the host to launch the next part"),
    "bound.cpu": lambda f: f"the run's CPU at {f['cpu']:.0f} % of a core: the Python thread is saturated",
    "bound.optimizer_bound": lambda f: f"optimizer-bound: optimizer.step() is {f['share']:.0%} of the step",
    "bound.optimizer": lambda f: (f"optimizer.step() {fmt_ms(f['ms'])} of a {fmt_ms(f['step'])} step "
                                  f"({f['share']:.0%})" + (" with the optimizer step compiled"
                                                           if f["compiled"] else "")),
    "bound.optimizer_vs": _optimizer_vs,
    "bound.raced": _raced,
    "bound.race_optimizer": lambda f: (f"race the optimizer step compiled too: --compile-optimizer "
                                       f"(mode {f['mode']})"),
    "bound.fused": lambda f: FUSED,
    "bound.optimizer_eager": lambda f: (f"the optimizer step runs eagerly: {f['share']:.0%} of the "
                                        "compiled step"),
    "bound.optimizer_captured": lambda f: (f"optimizer {fmt_ms(f['ms'])} of a {fmt_ms(f['step'])} step "
                                           f"({f['share']:.0%}) in {f['label']}'s {span_text(f['steps'])}, "
                                           "with no compiled graph inside"),
    "bound.optimizer_base": lambda f: (f"{f['label']}: optimizer {fmt_ms(f['ms'])}: compiling the model left "
                                       "it as it was"),
    "bound.compile_optimizer": lambda f: (f"compile the optimizer step too: --compile-optimizer "
                                          f"(mode {f['mode']})"),
    "bound.split": lambda f: f"{f['label']}'s steady step: {_split(f['split'])}",
    "bound.not_seen": lambda f: f"not seen: {', '.join(f['names'])} (in other)",
    "bound.phase": lambda f: f"{f['name']}: {fmt_ms(f['before'])} → {fmt_ms(f['after'])} ({_ratio(f)})",
    "bound.by_phase": lambda f: "by phase against {}: {}".format(
        f["base"], " · ".join(f"{n} {'cannot tell' if speedup is None else f'{speedup:.2f}×'}"
                              for n, speedup in f["speedups"])),
    "bound.where": lambda f: f"where the step goes: {_split(f['split'])}",
    "bound.compute": lambda f: f"compute-bound: forward and backward are {f['share']:.0%} of the step",
}
WORDS.update(fixed(TIPS))
