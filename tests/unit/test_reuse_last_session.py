"""A session starts from the last session under --out whose cache key could match
(control/cache_source.py ``last_session``), and carries that session's cold figures
(``cold_figures``): a differing fact, no artifacts or no summary each keep it cold."""

from __future__ import annotations

import json
from pathlib import Path

from tuimon.control.cache_source import cold_figures, last_session, reuse_key
from tuimon.control.warm import variant_key

META = {"torch": "2.14.1", "triton": None, "python": "3.11.7", "platform": "Linux", "host": "vm",
        "cpus": 2, "recipe": "recipes/tiny_mlp.py", "recipe_sha": "abc123", "command": None,
        "settings": {"set": None, "device": None, "batch_size": None, "image_size": None}}
COLD = {"processes": 1, "runs": ["default-fp32"], "compile_s": 58.0, "overhead_s": 58.7,
        "first_step_ms": 900.0, "phases": {"dynamo": 2.0}, "cache": {}}


def session(out: Path, name: str, meta: dict, artifacts: bool = True, summary: bool = True) -> Path:
    d = out / name
    d.mkdir(parents=True)
    (d / "meta.json").write_text(json.dumps({**meta, "name": name}))
    (d / "events.jsonl").write_text("")
    if artifacts:
        (d / "artifacts" / "default-fp32" / "cache").mkdir(parents=True)
    if summary:
        row = {"run": "default-fp32", "mode": "default", "precision": "fp32", "axes": {},
               "warm": {"starts": {"cold": COLD}}}
        (d / "summary.json").write_text(json.dumps({"runs": [row], "variants": []}))
    return d


def test_the_newest_session_alike_with_artifacts_is_chosen(tmp_path):
    session(tmp_path, "20261129-100000-tiny_mlp", META)
    newer = session(tmp_path, "20261129-110000-tiny_mlp", META)
    session(tmp_path, "20261129-120000-tiny_mlp", META, artifacts=False)  # eager only, or failed
    session(tmp_path, "20261129-123000-tiny_mlp", {**META, "status": "running"})  # still writing
    this = session(tmp_path, "20261129-130000-tiny_mlp", META)
    assert last_session(tmp_path, reuse_key(META), this) == newer


def test_any_differing_fact_keeps_the_session_cold(tmp_path):
    this = tmp_path / "20261129-130000-tiny_mlp"
    for n, change in enumerate([{"torch": "2.9.1"}, {"recipe_sha": "def456"}, {"host": "other"},
                                {"command": ["python", "train.py", "--bs", "64"]},
                                {"settings": {**META["settings"], "set": ["width=32"]}},
                                {"settings": {**META["settings"], "batch_size": 64}}]):
        session(tmp_path, f"20261129-1{n}0000-tiny_mlp", {**META, **change})
    assert last_session(tmp_path, reuse_key(META), this) is None


def test_no_sessions_directory_is_no_source(tmp_path):
    assert last_session(tmp_path / "absent", reuse_key(META), tmp_path / "x") is None


def test_the_cold_figures_carry_their_first_session(tmp_path):
    first = session(tmp_path, "20261129-100000-tiny_mlp", META)
    key = variant_key("default", "fp32", {})
    assert cold_figures(first)[key]["compile_s"] == 58.0
    assert cold_figures(first)[key]["session"] == first.name
    # A session that started warm itself carries the first one's name on.
    second = session(tmp_path, "20261129-110000-tiny_mlp", META, summary=False)
    row = {"mode": "default", "precision": "fp32", "axes": {},
           "warm": {"starts": {"cold": {**COLD, "session": first.name}, "warm": {"compile_s": 7.6}}}}
    (second / "summary.json").write_text(json.dumps({"runs": [], "variants": [row]}))
    assert cold_figures(second)[key]["session"] == first.name
    # No summary (killed, or still running): nothing to carry.
    assert cold_figures(session(tmp_path, "20261129-120000-tiny_mlp", META, summary=False)) == {}
