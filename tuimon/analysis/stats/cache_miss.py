"""Why a warm start missed, one point a reason (report/miss_text.py words them): torch's cache
lookups' keys, part by part, against the lookup that filled the cache, and what differs between
the two sessions' facts. Pure: the facts come from events (run_started, ``cache_source``)."""

from __future__ import annotations

from tuimon.analysis.stats.point import Point, point

# The facts compared, session-wide and per run (report/miss_text.py names each).
SESSION_FACTS = ("torch", "triton", "python", "platform", "cpus", "host", "recipe_sha")
RUN_FACTS = ("device", "device_name", "amp_dtype", "batch_size", "image_size", "params", "threads",
             "torch")
LIMIT = 8  # reasons a run shows; the rest are counted
SAME = {"fx_kwargs[get_decomp_fn]"}  # hashed from a function's address: differs in every process
KERNEL_S = 1.0  # kernel compiles in a warm start from a directory worth a reason


def fact_reasons(here: dict, there: dict, fields) -> list[Point]:
    out = []
    for key in fields:
        a, b = there.get(key), here.get(key)
        if a is None or b is None or a == b:
            continue
        out.append(point("fact", key=key, there=a, here=b))
    return out


def knob_reasons(here: dict, there: dict) -> list[Point]:
    """--set knobs (a recipe's cfg.extra) that differ, each named (None: not set)."""
    a, b = there.get("extra") or {}, here.get("extra") or {}
    return [point("knob", key=key, there=a.get(key), here=b.get(key))
            for key in sorted(set(a) | set(b)) if a.get(key) != b.get(key)]


def _configs(lookups: list[dict]) -> dict[str, dict]:
    """config digest -> its entries, as said once a process."""
    return {x["config"]: x["config_parts"] for x in lookups if x.get("config") and x.get("config_parts")}


def _match(lookup: dict, source: list[dict], index: dict) -> dict | None:
    """The source's lookup of the same cache, compile and position (forward, then backward)."""
    key = (lookup.get("cache"), lookup.get("compile_id"))
    n = index[key] = index.get(key, -1) + 1
    same = [s for s in source if (s.get("cache"), s.get("compile_id")) == key]
    return same[n] if n < len(same) else None


def key_reasons(lookups: list[dict], source: list[dict]) -> list[Point]:
    """Torch's own word: each missed lookup's key against the source's, the parts that differ."""
    out: list[Point] = []
    index: dict = {}
    here_configs, there_configs = _configs(lookups), _configs(source)
    for x in lookups:
        s = _match(x, source, index)
        if x.get("state") != "miss":
            continue
        what = {"cache": x.get("cache"), "compile": x.get("compile_id")}
        if s is None:  # its graphs differ: a graph break or recompile more or fewer
            out.append(point("no_lookup", **what))
            continue
        if s.get("key") and s.get("key") == x.get("key"):  # the artifacts do not hold it
            out.append(point("same_key", **what))
            continue
        a, b = s.get("parts") or {}, x.get("parts") or {}
        if not a or not b:
            continue  # AOTAutograd reports no parts: the FX lookup names the difference
        # Parts on one side only come with another torch (its own config entries): its version
        # says that; the parts both keys have and hash apart name the difference.
        differ = [p for p in sorted(set(a) & set(b)) if a[p] != b[p] and p not in SAME]
        inputs = [p for p in differ if p.startswith("example_inputs")]
        if inputs and not any(r.code == "inputs" for r in out):  # the first graph's say
            p = inputs[0]
            out.append(point("inputs", there=(s.get("briefs") or {}).get(p, "?"),
                             here=(x.get("briefs") or {}).get(p, "?"), more=len(inputs) - 1))
        for p in differ:
            if p.startswith("example_inputs"):
                continue
            if p.startswith("system_info"):
                out.append(point("system"))
            else:
                out.append(point("part", part=p, **_briefs(p, s, x)))
        c1, c2 = there_configs.get(s.get("config", "")), here_configs.get(x.get("config", ""))
        if s.get("config") != x.get("config") and c1 and c2 and names_differ(c1, c2):
            names = [k for k in sorted(set(c1) & set(c2)) if c1[k] != c2[k]]
            out.append(point("config", names=names))
    return out


def names_differ(c1: dict, c2: dict) -> bool:
    return any(c1[k] != c2[k] for k in set(c1) & set(c2))


def _briefs(part: str, s: dict, x: dict) -> dict:
    a, b = (s.get("briefs") or {}).get(part), (x.get("briefs") or {}).get(part)
    return {"there": a, "here": b} if a is not None and b is not None and a != b else {}


def kernel_reasons(seeded: dict, cache: dict, device: str | None) -> list[Point]:
    """Kernels compiled again in a warm start whose graphs hit (a graph that missed compiles its
    kernels anyway): ``bundle`` (torch's bundle holds the graphs, not compiled C++), or ``kernels``
    (not in the cache; only past KERNEL_S: a wrapper or two is nothing to explain)."""
    n = cache.get("kernels") or 0
    if not n or (cache.get("fx") or {}).get("miss"):
        return []
    what = {"kernels": n, "seconds": cache.get("kernel_s") or None,
            "kind": "C++" if not (device or "").startswith("cuda") else "Triton"}
    if seeded.get("kind") == "bundle":
        return [point("bundle_kernels", **what)]
    if (cache.get("kernel_s") or 0.0) < KERNEL_S:
        return []
    return [point("kernels", **what)]


def miss_reasons(lookups: list[dict], source: list[dict], run_here: dict, run_there: dict,
                 here: dict | None, there: dict | None, seeded: dict, cache: dict) -> list[Point]:
    """Every reason, facts first (what differs between the sessions), then torch's keys; at most
    LIMIT, the last of them ``more`` (how many were left)."""
    out = []
    if here is not None and there is not None:
        out += fact_reasons(here, there, SESSION_FACTS)
        if here.get("device") != there.get("device") and here.get("device") and there.get("device"):
            out.append(point("device", there=there["device"], here=here["device"]))
    out += fact_reasons(run_here, run_there, RUN_FACTS)
    out += knob_reasons(run_here, run_there)
    out += key_reasons(lookups, source)
    out += kernel_reasons(seeded, cache, run_here.get("device"))
    out = _distinct(out)
    if not out and any(x.get("state") == "miss" for x in lookups):
        out.append(point("unseen"))  # the artifacts may be from another tuimon, or hold only part
    if len(out) > LIMIT:
        out = out[:LIMIT - 1] + [point("more", n=len(out) - LIMIT + 1)]
    return out


def _distinct(points: list[Point]) -> list[Point]:
    """Each reason once (a torch version that differs is a session fact and a run fact)."""
    out: list[Point] = []
    for p in points:
        if p not in out:
            out.append(p)
    return out
