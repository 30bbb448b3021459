"""Why a warm start missed, in words: one line a reason (analysis/stats/cache_miss.py finds them:
the two sessions' facts, a --set knob, torch's cache keys part by part, kernels compiled again)."""

from __future__ import annotations

from tuimon.analysis import Point
from tuimon.fmt import fmt_s

FACTS = {"torch": "torch", "triton": "Triton", "python": "Python", "platform": "platform",
         "cpus": "CPU cores", "host": "host", "recipe_sha": "the recipe's (script's) code, by its hash",
         "device": "device", "device_name": "device", "amp_dtype": "autocast dtype",
         "batch_size": "batch size", "image_size": "image size", "params": "parameters",
         "threads": "threads"}
PARTS = {"gm": "the graph itself (the model's code or structure)",
         "torch_version": "the torch build", "default_dtype": "the default dtype",
         "cpp_runtime_thread_count": "the thread count",
         "deterministic_algorithms_settings": "deterministic algorithms",
         "cuda_matmul_settings": "CUDA matmul settings (TF32)"}
CACHES = {"fx": "FX graph"}  # any other: AOTAutograd


def _value(x) -> str:
    if x is None or x == {} or x == []:
        return "none"
    if isinstance(x, dict):
        return ", ".join(f"{k}={v}" for k, v in sorted(x.items()))
    return str(x)


def _kernels(p: Point) -> str:
    n = p.get("kernels")
    spent = f" ({fmt_s(p.get('seconds'))})" if p.get("seconds") else ""
    return f"{n} {p.get('kind')} kernel compile{'s' if n != 1 else ''} again{spent}"


def miss_text(p: Point) -> str:  # noqa: PLR0911 - one form a code
    f = p.figures
    if p.code == "fact":
        there, here = f["there"], f["here"]
        if f["key"] == "params":
            there, here = f"{there:,}", f"{here:,}"
        return f"{FACTS[f['key']]}: {_value(there)} there, {_value(here)} here"
    if p.code == "device":
        return f"--device: {f['there']} there, {f['here']} here"
    if p.code == "knob":
        there = f["there"] if f["there"] is not None else "not set"
        here = f["here"] if f["here"] is not None else "not set"
        return f"--set {f['key']}: {there} there, {here} here"
    if p.code in ("no_lookup", "same_key"):
        what = f"{CACHES.get(f['cache'], 'AOTAutograd')} cache, compile {f['compile']}"
        if p.code == "no_lookup":
            return (f"{what}: no such lookup in the source (its graphs differ: a graph break or "
                    "recompile more or fewer)")
        return (f"{what}: the same key as the source's, yet not in the cache (the artifacts do "
                "not hold it: saved before it compiled, or missing)")
    if p.code == "inputs":
        n = f["more"]
        more = f" (and {n} more input{'s' if n > 1 else ''})" if n else ""
        return f"input shapes or dtypes differ: {f['there']} there, {f['here']} here{more}"
    if p.code == "part":
        briefs = f": {f['there']} there, {f['here']} here" if "there" in f else ""
        return f"{PARTS.get(f['part'], f['part'])} differs{briefs}"
    if p.code == "system":
        return "the system differs (device, driver or compiler: torch's system_info)"
    if p.code == "config":
        names = f["names"]
        shown = ", ".join(names[:4]) + (f" (and {len(names) - 4} more)" if len(names) > 4 else "")
        return f"Inductor config differs: {shown} (a compile mode's options, or the code's own)"
    if p.code == "bundle_kernels":
        cpp = ", not compiled C++" if f["kind"] == "C++" else ""
        return (f"{_kernels(p)}: torch's bundle holds the graphs{cpp}; --warm-from dir carries the "
                "compiled kernels too")
    if p.code == "kernels":
        return f"{_kernels(p)}: the kernels were not in the cache"
    if p.code == "unseen":
        return ("torch missed, and nothing tuimon can see differs (the artifacts may be from "
                "another tuimon, or hold only part of the compiles)")
    if p.code == "more":
        return f"... and {f['n']} more"
    raise KeyError(p.code)
