"""Why a warm start missed, one line a reason: from what torch reports (each cache lookup's key,
part by part, against the lookup that filled the cache: the graph, each input's dtype and shape,
the torch build, the system, an Inductor config entry) and from what differs between the two
sessions' facts (torch / Triton / Python version, platform, cores, device, dtype, batch, a --set
knob, the recipe's or script's code). Pure: the facts come from events (run_started, the
``cache_source`` event of --cache-from)."""

from __future__ import annotations

from tuimon.fmt import fmt_s

SESSION_FACTS = (("torch", "torch"), ("triton", "Triton"), ("python", "Python"),
                 ("platform", "platform"), ("cpus", "CPU cores"), ("host", "host"),
                 ("recipe_sha", "the recipe's (script's) code, by its hash"))
RUN_FACTS = (("device", "device"), ("device_name", "device"), ("amp_dtype", "autocast dtype"),
             ("batch_size", "batch size"), ("image_size", "image size"), ("params", "parameters"),
             ("threads", "threads"), ("torch", "torch"))
PART_WORDS = {"gm": "the graph itself (the model's code or structure)",
              "torch_version": "the torch build", "default_dtype": "the default dtype",
              "cpp_runtime_thread_count": "the thread count",
              "deterministic_algorithms_settings": "deterministic algorithms",
              "cuda_matmul_settings": "CUDA matmul settings (TF32)"}
LIMIT = 8  # reasons a run shows; the rest are counted
SAME = {"fx_kwargs[get_decomp_fn]"}  # hashed from a function's address: differs in every process
KERNEL_S = 1.0  # kernel compiles in a warm start from a directory worth a reason


def _value(x) -> str:
    if x is None or x == {} or x == []:
        return "none"
    if isinstance(x, dict):
        return ", ".join(f"{k}={v}" for k, v in sorted(x.items()))
    return str(x)


def fact_reasons(here: dict, there: dict, fields) -> list[str]:
    out = []
    for key, words in fields:
        a, b = there.get(key), here.get(key)
        if a is None or b is None or a == b:
            continue
        if key == "params":
            a, b = f"{a:,}", f"{b:,}"
        out.append(f"{words}: {_value(a)} there, {_value(b)} here")
    return out


def knob_reasons(here: dict, there: dict) -> list[str]:
    """--set knobs (a recipe's cfg.extra) that differ, each named."""
    a, b = there.get("extra") or {}, here.get("extra") or {}
    out = []
    for key in sorted(set(a) | set(b)):
        if a.get(key) != b.get(key):
            out.append(f"--set {key}: {a.get(key, 'not set')} there, {b.get(key, 'not set')} here")
    return out


def _configs(lookups: list[dict]) -> dict[str, dict]:
    """config digest -> its entries, as said once a process."""
    return {x["config"]: x["config_parts"] for x in lookups if x.get("config") and x.get("config_parts")}


def _match(lookup: dict, source: list[dict], index: dict) -> dict | None:
    """The source's lookup of the same cache, compile and position (forward, then backward)."""
    key = (lookup.get("cache"), lookup.get("compile_id"))
    n = index[key] = index.get(key, -1) + 1
    same = [s for s in source if (s.get("cache"), s.get("compile_id")) == key]
    return same[n] if n < len(same) else None


def key_reasons(lookups: list[dict], source: list[dict]) -> list[str]:
    """Torch's own word: each missed lookup's key against the source's, the parts that differ."""
    out: list[str] = []
    index: dict = {}
    here_configs, there_configs = _configs(lookups), _configs(source)
    for x in lookups:
        s = _match(x, source, index)
        if x.get("state") != "miss":
            continue
        name = "FX graph" if x.get("cache") == "fx" else "AOTAutograd"
        what = f"{name} cache, compile {x.get('compile_id')}"
        if s is None:
            out.append(f"{what}: no such lookup in the source (its graphs differ: a graph break or "
                       "recompile more or fewer)")
            continue
        if s.get("key") and s.get("key") == x.get("key"):
            out.append(f"{what}: the same key as the source's, yet not in the cache (the artifacts do "
                       "not hold it: saved before it compiled, or missing)")
            continue
        a, b = s.get("parts") or {}, x.get("parts") or {}
        if not a or not b:
            continue  # AOTAutograd reports no parts: the FX lookup names the difference
        # Parts on one side only come with another torch (its own config entries): its version
        # says that; the parts both keys have and hash apart name the difference.
        differ = [p for p in sorted(set(a) & set(b)) if a[p] != b[p] and p not in SAME]
        inputs = [p for p in differ if p.startswith("example_inputs")]
        if inputs and not any(x.startswith("input shapes") for x in out):  # the first graph's say
            p = inputs[0]
            more = (f" (and {len(inputs) - 1} more input{'s' if len(inputs) > 2 else ''})"
                    if len(inputs) > 1 else "")
            out.append(f"input shapes or dtypes differ: {(s.get('briefs') or {}).get(p, '?')} there, "
                       f"{(x.get('briefs') or {}).get(p, '?')} here{more}")
        for p in differ:
            if p.startswith("example_inputs"):
                continue
            if p in PART_WORDS:
                out.append(f"{PART_WORDS[p]} differs" + _briefs(p, s, x))
            elif p.startswith("system_info"):
                out.append("the system differs (device, driver or compiler: torch's system_info)")
            else:
                out.append(f"{p} differs" + _briefs(p, s, x))
        c1, c2 = there_configs.get(s.get("config")), here_configs.get(x.get("config"))
        if s.get("config") != x.get("config") and c1 and c2 and names_differ(c1, c2):
            names = [k for k in sorted(set(c1) & set(c2)) if c1[k] != c2[k]]
            shown = ", ".join(names[:4]) + (f" (and {len(names) - 4} more)" if len(names) > 4 else "")
            out.append(f"Inductor config differs: {shown} (a compile mode's options, or the code's own)")
    return out


def names_differ(c1: dict, c2: dict) -> bool:
    return any(c1[k] != c2[k] for k in set(c1) & set(c2))


def _briefs(part: str, s: dict, x: dict) -> str:
    a, b = (s.get("briefs") or {}).get(part), (x.get("briefs") or {}).get(part)
    return f": {a} there, {b} here" if a is not None and b is not None and a != b else ""


def kernel_reasons(seeded: dict, cache: dict, device: str | None) -> list[str]:
    """Kernels compiled again in a warm start whose graphs hit (a graph that missed compiles its
    kernels anyway): the bundle on a CPU carries no compiled C++."""
    n = cache.get("kernels") or 0
    if not n or (cache.get("fx") or {}).get("miss"):
        return []
    spent = f" ({fmt_s(cache['kernel_s'])})" if cache.get("kernel_s") else ""
    what = "C++" if not (device or "").startswith("cuda") else "Triton"
    if seeded.get("kind") == "bundle":
        return [f"{n} {what} kernel compile{'s' if n != 1 else ''} again{spent}: torch's bundle "
                f"holds the graphs{', not compiled C++' if what == 'C++' else ''}; --warm-from dir "
                "carries the compiled kernels too"]
    if (cache.get("kernel_s") or 0.0) < KERNEL_S:  # a wrapper or two: nothing to explain
        return []
    return [f"{n} {what} kernel compile{'s' if n != 1 else ''} again{spent}: the kernels were not in "
            "the cache"]


def miss_reasons(lookups: list[dict], source: list[dict], run_here: dict, run_there: dict,
                 here: dict | None, there: dict | None, seeded: dict, cache: dict) -> list[str]:
    """Every reason, facts first (what differs between the sessions), then torch's keys."""
    out = []
    if here is not None and there is not None:
        out += fact_reasons(here, there, SESSION_FACTS)
        if here.get("device") != there.get("device") and here.get("device") and there.get("device"):
            out.append(f"--device: {there['device']} there, {here['device']} here")
    out += fact_reasons(run_here, run_there, RUN_FACTS)
    out += knob_reasons(run_here, run_there)
    out += key_reasons(lookups, source)
    out += kernel_reasons(seeded, cache, run_here.get("device"))
    out = list(dict.fromkeys(out))
    if not out and any(x.get("state") == "miss" for x in lookups):
        out.append("torch missed, and nothing tuimon can see differs (the artifacts may be from "
                   "another tuimon, or hold only part of the compiles)")
    if len(out) > LIMIT:
        out = out[:LIMIT - 1] + [f"... and {len(out) - LIMIT + 1} more"]
    return out
