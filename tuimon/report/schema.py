"""summary.json's shape: its version, its JSON Schema (summary.schema.json, shipped beside this
module), and the one place a file another version wrote is read into today's shape (``read``,
``upgrade``): every reader of a stored summary.json goes through here. Version 1 (before issue
41, no ``schema_version``) kept a row flat, a phase spelled into its keys, some words where codes
are now; version 2 nests a row as its records are, its words under ``words``."""

from __future__ import annotations

import json
from collections.abc import Set
from dataclasses import fields, is_dataclass, replace
from pathlib import Path
from typing import Any

from tuimon.analysis import RunStats
from tuimon.report import why_text

SCHEMA_VERSION = 2
SCHEMA = Path(__file__).with_name("summary.schema.json")

# Version 1's words and the key version 2 keeps them under, in a row's ``words``.
_WORDS_V1 = {"unreliable": "unreliable", "val_words": "val_guards", "memory_words": "memory",
             "energy_words": "energy", "flops_words": "flops"}
# ... and the words version 1 kept in place of the codes (the codes are lost: none is read back).
_WORDED_V1 = ("nothing_compiled", "fell_back", "miss_reasons", "compile_divergence")
_FLOPS_V1 = {"flops_precision": "precision", "flops_calls": "calls", "flops_counted_on": "counted_on",
             "flops_ops": "ops", "flops_error": "error"}
# A row's words where a file of version 1 had none (it was older than they are).
_NO_WORDS: dict[str, list[str] | None] = {
    "unreliable": None, "nothing_compiled": None, "fell_back": [], "val_guards": [], "miss_reasons": [],
    "compile_divergence": [], "memory": None, "energy": None, "flops": []}
# Version 1's ``mfu_measured_forward``: version 2's ``flops.phases.forward.mfu_measured``.
_PARTS = ("step", "forward", "backward", "optimizer")
_FIGURES = ("flops", "flop_s", "mfu_measured", "mfu_datasheet")  # a phase's record's fields


def read(path: str | Path) -> dict[str, Any]:
    """A stored summary.json, in today's shape (OSError, ValueError: unreadable)."""
    doc: dict[str, Any] = json.loads(Path(path).read_text(encoding="utf-8"))
    return upgrade(doc)


def upgrade(doc: dict[str, Any]) -> dict[str, Any]:
    """``doc`` in today's shape; a newer version than this tuimon knows is a ValueError."""
    version = doc.get("schema_version", 1)
    if version == SCHEMA_VERSION:
        return doc
    if version != 1:
        raise ValueError(f"summary.json schema version {version}: this tuimon reads up to "
                         f"{SCHEMA_VERSION}")
    rows = {key: [_row_v1(r) for r in doc.get(key) or []] for key in ("runs", "variants")}
    why = [_why_v1(w) for w in doc.get("why") or []]
    return {"schema_version": SCHEMA_VERSION, **doc, **rows, "why": why}


def _why_v1(old: dict[str, Any]) -> dict[str, Any]:
    """A diagnosed variant of version 1, with the headline version 2 keeps beside its figures."""
    said = {"doubted": False, **old}
    headline = why_text.headline(said["label"], said["compiled"], said["speedup"], said["helped"],
                                 said["doubted"])
    return {k: v for k, v in said.items() if k != "findings"} | {"headline": headline,
                                                                 "findings": said["findings"]}


def _row_v1(old: dict[str, Any]) -> dict[str, Any]:
    """One flat row of version 1, nested: built into today's records (a later figure an older
    file lacks keeps its default, "not measured") and serialized as today's rows are."""
    old = dict(old)
    words = {**_NO_WORDS, "notes": old.get("notes", []),
             "left_out": [p.get("why") for p in old.get("left_out") or []]}
    words |= {new: old.pop(key) for key, new in _WORDS_V1.items() if key in old}
    words |= {key: old.pop(key) for key in _WORDED_V1 if key in old}
    old["left_out"] = [{**p, "why": None} for p in old.get("left_out") or []]
    blank = RunStats("", "", "")
    records: dict[str, Any] = {"flops": _flops_v1(blank, old)}  # a record of each kind the row holds
    for f in fields(blank):
        kind: type[Any] = type(getattr(blank, f.name))
        if is_dataclass(kind) and f.name not in records:
            records[f.name] = kind(**_found(kind, old))
    row = RunStats(**{"run": "", "mode": "", "precision": "", **_found(RunStats, old, set(records))},
                   **records)
    return row.to_dict() | {"words": words}


def _found(kind: type[Any], old: dict[str, Any], exclude: Set[str] = frozenset()) -> dict[str, Any]:
    """``kind``'s fields that ``old`` holds."""
    names = {f.name for f in fields(kind)} - exclude
    return {k: v for k, v in old.items() if k in names}


def _flops_v1(blank: RunStats, old: dict[str, Any]) -> object:
    """Version 1's FLOPs keys as today's record (``blank``'s, filled in), a record a phase."""
    parts = {name: replace(blank.flops.step, **{figure: old.get(f"{figure}_{name}") for figure in _FIGURES})
             for name in _PARTS}
    step = parts.pop("step")
    # the peaks, mfu_basis, mfu_over
    same = _found(type(blank.flops), old, {*_FLOPS_V1.values(), "step", "phases"})
    renamed = {new: old[key] for key, new in _FLOPS_V1.items() if key in old}
    return replace(blank.flops, step=step, phases=parts if step.flops is not None else {}, **same, **renamed)
