"""What differs between the sessions of a comparison, said before any number: the recipe or
command, every setting, the host, the devices, the versions of torch, triton and the rest; from
meta.json and the runs' ``run_started`` events, GPUs as the probes named them."""

from __future__ import annotations

import shlex

from tuimon import events
from tuimon.analysis.compare.sessions import Session

ALWAYS = {"recipe", "command"}  # a recipe's session against a script's: said even though one lacks it
NOT_SHOWN = {"fps"}  # how the TUI redraws: nothing measured depends on it
META = (("recipe", "recipe"), ("tuimon", "tuimon"), ("host", "host"), ("platform", "platform"),
        ("cpus", "CPUs"), ("python", "python"), ("torch", "torch"), ("triton", "triton"),
        ("torchvision", "torchvision"), ("timm", "timm"), ("cache", "Inductor cache"))
RUN_FACTS = (("device_name", "device"), ("torch", "torch (runner)"), ("threads", "threads"),
             ("amp_dtype", "autocast dtype"), ("params", "parameters"), ("batch_size", "batch size"),
             ("image_size", "image size"), ("recipe", "recipe name"))


def facts(s: Session) -> dict[str, str]:
    """Everything about one session that could explain a difference, as text."""
    meta = s.meta
    out: dict[str, str] = {}
    if meta.get("command"):
        out["command"] = shlex.join(meta["command"])
    for key, name in META:
        if key == "recipe" and meta.get("command"):
            continue
        if key in meta:  # None: not installed; absent: an older tuimon did not record it
            out[name] = _text(meta[key])
    for key, value in sorted((meta.get("settings") or {}).items()):
        if key not in NOT_SHOWN:
            out[f"--{key.replace('_', '-')}"] = _text(value)
    started = [e for e in s.events if e["type"] == events.RUN_STARTED]
    for key, name in RUN_FACTS:
        values = sorted({_text(e.get(key)) for e in started if e.get(key) is not None})
        if values:
            out[name] = ", ".join(values)
    knobs = sorted({f"{k}={v}" for e in started for k, v in (e.get("extra") or {}).items()})
    if knobs:
        out["recipe knobs (cfg.extra)"] = ", ".join(knobs)
    gpus = sorted({d.get("name") for e in s.events if e["type"] == events.PROBE_INFO
                   for d in e.get("devices") or [] if d.get("name")})
    if gpus:
        out["GPUs (NVML)"] = ", ".join(gpus)
    return out


def differences(sessions: list[Session]) -> list[tuple[str, list[str]]]:
    """(what, its value in each session) for everything that is not the same in all of them."""
    each = [facts(s) for s in sessions]
    names = list(dict.fromkeys(name for f in each for name in f))
    out = []
    for name in names:
        if name not in ALWAYS and any(name not in f for f in each):
            continue  # not recorded by one of them (an older tuimon, a run that never started)
        values = [f.get(name, "–") for f in each]
        if len(set(values)) > 1:
            out.append((name, values))
    return out


def _text(value) -> str:
    if value is None:
        return "–"
    if isinstance(value, list):
        return " ".join(str(v) for v in value) or "–"
    if isinstance(value, bool):
        return "on" if value else "off"
    return str(value)
