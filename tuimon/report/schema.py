"""summary.json's shape: its version, its JSON Schema (summary.schema.json, beside this module,
shipped with the package), and the one place a file another version wrote is read into today's
shape (``read``, ``upgrade``): every reader of a stored summary.json goes through here.

Version 1 (every session before issue 41, no ``schema_version`` key) kept a row flat, a phase
spelled into its keys (``mfu_measured_forward``) and some words where the codes are now
(``nothing_compiled``, ``fell_back``, ``miss_reasons``, ``compile_divergence``, a left-out
round's ``why``). Version 2 nests a row as its records are (``timing``, ``compare``, ...,
``flops``: a record a phase), with its words under ``words``, and each diagnosed variant's
``headline`` beside its findings."""

from __future__ import annotations

import json
from dataclasses import fields, is_dataclass
from pathlib import Path

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
_NO_WORDS = {"unreliable": None, "nothing_compiled": None, "fell_back": [], "val_guards": [],
             "miss_reasons": [], "compile_divergence": [], "memory": None, "energy": None, "flops": []}
# Version 1's ``mfu_measured_forward``: version 2's ``flops.phases.forward.mfu_measured``.
_PARTS = ("step", "forward", "backward", "optimizer")
_FIGURES = ("flops", "flop_s", "mfu_measured", "mfu_datasheet")
_PHASE_V1 = {f"{figure}_{part}": (part, figure) for figure in _FIGURES for part in _PARTS}


def read(path: str | Path) -> dict:
    """A stored summary.json, in today's shape (OSError, ValueError: unreadable)."""
    return upgrade(json.loads(Path(path).read_text(encoding="utf-8")))


def upgrade(doc: dict) -> dict:
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


def _why_v1(old: dict) -> dict:
    """A diagnosed variant of version 1, with the headline version 2 keeps beside its figures."""
    said = {"doubted": False, **old}
    headline = why_text.headline(said["label"], said["compiled"], said["speedup"], said["helped"],
                                 said["doubted"])
    return {k: v for k, v in said.items() if k != "findings"} | {"headline": headline,
                                                                 "findings": said["findings"]}


def _groups() -> dict[str, set[str]]:
    """A row's records, by name, and each one's fields."""
    row = RunStats("", "", "")
    return {f.name: {g.name for g in fields(getattr(row, f.name))}
            for f in fields(row) if is_dataclass(getattr(row, f.name))}


def _row_v1(old: dict) -> dict:
    """One flat row of version 1, nested: today's row with its defaults (an older file lacks
    later figures: None, "not measured"), each key of the old row in its record."""
    groups = _groups()
    owner = {name: group for group, names in groups.items() for name in names}
    row = RunStats(old.get("run", ""), old.get("mode", ""), old.get("precision", "")).to_dict()
    row["label"] = old.get("label", row["label"])
    words = {**_NO_WORDS, "notes": old.get("notes", []),
             "left_out": [p.get("why") for p in old.get("left_out") or []]}
    parts = {part: dict.fromkeys(_FIGURES) for part in _PARTS}
    for key, value in old.items():
        if key in _WORDS_V1:
            words[_WORDS_V1[key]] = value
        elif key in _WORDED_V1:
            words[key] = value
        elif key == "left_out":
            row[key] = [{**p, "why": None} for p in value]
        elif key in _FLOPS_V1:
            row["flops"][_FLOPS_V1[key]] = value
        elif key in _PHASE_V1:
            part, figure = _PHASE_V1[key]
            parts[part][figure] = value
        elif key in owner:
            row[owner[key]][key] = value
        elif key in row and key != "label":
            row[key] = value
    row["flops"]["step"] = parts.pop("step")
    if row["flops"]["step"]["flops"] is not None:  # counted: a record a phase
        row["flops"]["phases"] = parts
    row["words"] = words
    return row
