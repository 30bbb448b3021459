"""Cache lookups from torch's structured trace: each FX-graph and AOTAutograd cache lookup torch
reports (``fx_graph_cache_hit`` / ``_miss`` / ``_bypass``, ``aotautograd_cache_*`` artifacts)
becomes one ``cache_lookup`` event, with the parts of its key, so a miss can be explained
against the lookup that filled the cache (analysis/stats/cache_miss.py).

A key's parts are torch's own "debug lines", ``[hash] name: value``: the graph, each input's
dtype and shape, the torch version, the system, every Inductor config entry, ... Only their
hashes travel (and a short value where it names something a person can check: an input's
dtype and shape, a thread count); the ~600 config entries go once a process, and again only
when they change.
"""

from __future__ import annotations

import hashlib
import json
import re

from tuimon import events

PART = re.compile(r"\[(\w+)\] ([^:]+): (.*)", re.S)
TENSOR = re.compile(r"dtype=torch\.(\w+), shape=torch\.Size\(\[([^\]]*)\]\)")
DEVICE = re.compile(r"device=device\(type='(\w+)'(?:, index=(\d+))?\)")
CONFIG = "inductor_config"  # inductor_config[...], inductor_config_comms[...]
HASH_CHARS = 10
QUIET = ("gm", "torch_version")  # their values are code or bytes: the hash says enough


def brief(name: str, value: str) -> str | None:
    """A component's value in a few words a person can check, or None."""
    if name in QUIET or name.startswith(CONFIG):
        return None
    m = TENSOR.search(value)
    if m:
        device = DEVICE.search(value)
        where = f" {device.group(1)}{':' + device.group(2) if device and device.group(2) else ''}" \
            if device else ""
        return f"{m.group(1)}[{m.group(2)}]{where}"
    line = value.strip().splitlines()[0] if value.strip() else ""
    return line[:80] if line.isprintable() else None


class CacheTrace:
    """Turns cache-lookup artifacts into events; remembers which config it has said."""

    def __init__(self, emitter) -> None:
        self.emitter = emitter
        self._configs: set[str] = set()

    def lookup(self, name: str, payload, compile_id: str | None, more: dict | None = None) -> None:
        """``more``: fields to add (``validation: True`` for a validation pass's compile)."""
        named, _, state = name.rpartition("_cache_")
        cache = {"fx_graph": "fx", "aotautograd": "aot"}.get(named)
        if cache is None:
            return
        info = payload if isinstance(payload, dict) else json.loads(payload or "{}")
        parts, briefs, config = {}, {}, {}
        for line in info.get("components") or []:
            m = PART.match(str(line))
            if not m:
                continue
            digest, part, value = m.group(1)[:HASH_CHARS], m.group(2).strip(), m.group(3)
            if part.startswith(CONFIG):
                config[part] = digest
                continue
            parts[part] = digest
            if (b := brief(part, value)) is not None:
                briefs[part] = b
        fields = {"compile_id": compile_id, "cache": cache, "state": info.get("cache_state") or state,
                  "key": info.get("key")}
        if info.get("cache_bypass_reason"):
            fields["reason"] = str(info["cache_bypass_reason"])[:300]
        if info.get("time_saved_ns"):
            fields["saved_s"] = round(info["time_saved_ns"] / 1e9, 3)
        if parts:
            fields.update(parts=parts, briefs=briefs)
        if config:
            digest = hashlib.sha1(json.dumps(config, sort_keys=True).encode()).hexdigest()[:HASH_CHARS]
            fields["config"] = digest
            if digest not in self._configs:  # once a process, and whenever it changes
                self._configs.add(digest)
                fields["config_parts"] = config
        self.emitter.emit_now(events.CACHE_LOOKUP, **fields, **(more or {}))
