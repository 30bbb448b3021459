"""--cache-from SESSION: another session's compile artifacts as this session's start, read from
its directory (here or copied from another machine), and what the reasons of a miss compare:
the facts of both sessions and the cache lookups that filled the source's caches. Recorded in
this session as one ``cache_source`` event, so its summary is a function of its own events.

Without the flag, a session starts from the last session under ``--out`` whose facts are all
this one's (``last_session``: the same recipe or script, code, torch, machine and settings): the
second session of a script starts warm, as a user's own second run would, and the cold compile
it then cannot measure is carried from the source's summary (each variant's ``cold`` figures,
themselves carried when the source started warm too)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from tuimon import events
from tuimon.control.warm import ARTIFACTS, BUNDLE, CACHE, Source, variant_key
from tuimon.sessiondir import store

# Session-level facts that decide whether a cache can hit (meta.json).
FACTS = ("torch", "triton", "python", "platform", "host", "cpus", "recipe", "recipe_sha")
# A run's facts (its run_started event).
RUN_FACTS = ("device", "device_name", "params", "batch_size", "image_size", "extra", "amp_dtype",
             "threads", "torch")
LOOKUP_FIELDS = ("compile_id", "cache", "state", "key", "parts", "briefs", "config", "config_parts")


class SourceError(ValueError):
    """--cache-from cannot be used; the message is one line."""


def file_sha(path: str | Path | None) -> str | None:
    """A short hash of a recipe's or script's file: a code change shows as another hash."""
    if not path:
        return None
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:12]
    except OSError:
        return None


def facts(meta: dict) -> dict:
    found = {k: meta.get(k) for k in FACTS}
    settings = meta.get("settings") or {}
    found["set"] = settings.get("set")
    found["device"] = settings.get("device")
    return found


def read_source(path: str | Path) -> tuple[Source, dict]:
    """(the Source, the ``cache_source`` event's fields without ``here``); SourceError when
    ``path`` is no session or holds no compile artifacts."""
    p = Path(path).expanduser()
    why = store.check_session(p)
    if why is not None:
        raise SourceError(f"--cache-from: {why}")
    p = p.resolve()
    meta = store.read_meta(p)
    evs, _ = store.read_events(p)
    runs: dict[str, dict] = {}
    for e in evs:
        run = e.get("run")
        if run is None or e.get("rank") not in (None, 0):
            continue
        if e["type"] == events.RUN_QUEUED:
            runs[run] = {"mode": e.get("mode"), "precision": e.get("precision"),
                         "axes": e.get("axes") or {}, "lookups": []}
        elif run in runs and e["type"] == events.RUN_STARTED:
            runs[run].update({k: e.get(k) for k in RUN_FACTS if e.get(k) is not None})
        elif run in runs and e["type"] == events.CACHE_LOOKUP:
            runs[run]["lookups"].append({k: e[k] for k in LOOKUP_FIELDS if k in e})
    kept = {run: info for run, info in runs.items()
            if (p / ARTIFACTS / run / CACHE).is_dir() or (p / ARTIFACTS / run / BUNDLE).is_file()}
    if not kept:
        raise SourceError(f"--cache-from: {p} holds no compile artifacts (no artifacts/<run>/ from a "
                          "compiled run: a session recorded before tuimon kept them, or with "
                          "--cache-dir, or whose compiled runs failed)")
    source = Source(p, p.name)
    for run, info in kept.items():  # a variant's first run with artifacts
        source.runs.setdefault(variant_key(info["mode"], info["precision"], info["axes"]), run)
    chosen = set(source.runs.values())
    fields: dict[str, Any] = {"session": p.name, "path": str(p), "there": facts(meta),
              "runs": {run: info for run, info in kept.items() if run in chosen}}
    colds = cold_figures(p)
    for info in fields["runs"].values():
        cold = colds.get(variant_key(info["mode"], info["precision"], info["axes"]))
        if cold is not None:
            info["cold"] = cold
    return source, fields


COLD_FIELDS = ("compile_s", "overhead_s", "first_step_ms", "phases", "cache", "processes")


def cold_figures(path: Path) -> dict[tuple, dict]:
    """Each variant's cold-start compile figures in a finished session's summary.json (variant
    key -> figures, with ``session``: where that cold compile was measured); {} when it has no
    summary (still running, or killed) or measured no cold start."""
    try:
        doc = json.loads((path / "summary.json").read_text())
    except (OSError, ValueError):
        return {}
    found: dict[tuple, dict] = {}
    for row in doc.get("variants") or doc.get("runs") or []:
        cold = ((row.get("warm") or {}).get("starts") or {}).get("cold")
        if not cold or cold.get("compile_s") is None:
            continue
        key = variant_key(row.get("mode"), row.get("precision"), row.get("axes") or {})
        found.setdefault(key, {**{k: cold.get(k) for k in COLD_FIELDS},
                               "session": cold.get("session") or path.name})
    return found


def reuse_key(meta: dict) -> dict:
    """What two sessions must share for one to start from the other's artifacts by default:
    their facts, the script's command line and the shapes the flags set."""
    settings = meta.get("settings") or {}
    return {**facts(meta), "command": meta.get("command"), "batch_size": settings.get("batch_size"),
            "image_size": settings.get("image_size")}


def last_session(out: Path, here: dict, this: Path, look: int = 50) -> Path | None:
    """The newest session under ``out`` (of its ``look`` newest, ``this`` aside) that has ended,
    whose ``reuse_key`` is ``here`` and that kept compile artifacts; None when none."""
    try:
        names = sorted((d for d in out.iterdir() if d.is_dir() and d.resolve() != this.resolve()),
                       key=lambda d: d.name, reverse=True)[:look]
    except OSError:
        return None
    for d in names:
        if not (d / ARTIFACTS).is_dir() or store.check_session(d) is not None:
            continue
        meta = store.read_meta(d)
        if meta.get("status") != "running" and reuse_key(meta) == here:  # a running one keeps writing
            return d
    return None
