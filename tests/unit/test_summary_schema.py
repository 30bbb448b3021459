"""summary.json's schema (issue 41): every summary tuimon writes validates against the JSON Schema
the package ships (tuimon/report/summary.schema.json), rows nested as their records are and a
record a phase; a file of version 1 (flat rows, every session before it) is read through the one
upgrade, into the same shape and the same figures."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from synthetic_session import session

from tuimon.analysis import load_session, summarize
from tuimon.report import export, schema

DATA = Path(__file__).parents[1] / "data"
RECORDED = ["session_tiny_mlp", "session_recipe_tiny_mlp", "session_ranks_tiny_mlp", "session_script_vae"]
V1 = DATA / "summary_v1_tiny_mlp.json"  # summary.json as tuimon wrote it before issue 41


@pytest.fixture(scope="module")
def validator():
    spec = json.loads(schema.SCHEMA.read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(spec)
    return jsonschema.Draft202012Validator(spec)


def written(path: Path) -> dict:
    meta, _, summary = load_session(path)
    return json.loads(export.to_json(meta, summary))


def test_the_schema_ships_with_the_package():
    pyproject = (Path(__file__).parents[2] / "pyproject.toml").read_text()
    shipped = schema.SCHEMA.relative_to(schema.SCHEMA.parents[1]).as_posix()
    assert f'tuimon = ["{shipped}"]' in pyproject and schema.SCHEMA.is_file()


@pytest.mark.parametrize("name", RECORDED)
def test_recorded_sessions_summaries_validate(name, validator):
    doc = written(DATA / name)
    validator.validate(doc)
    assert doc["schema_version"] == schema.SCHEMA_VERSION == 2 and list(doc)[0] == "schema_version"


def test_a_synthetic_sessions_summary_validates_and_nests_its_rows(tmp_path, validator):
    doc = written(session(tmp_path, "s", gpu=True))
    validator.validate(doc)
    eager, compiled = doc["runs"]
    assert list(compiled)[:2] == ["run", "label"] and compiled["label"] == "default/fp32"
    assert compiled["timing"]["median_ms"] > 0 and compiled["compile"]["compile_s"] > 0
    assert compiled["compare"]["baseline"] == "eager/fp32" and eager["phases"]["step_phases"]["forward"]
    assert compiled["words"]["memory"]["phases"].startswith("n/a (CPU")
    assert not any("_" in k and k.split("_")[-1] in ("forward", "backward") for k in compiled)


def test_a_phase_is_a_record_of_the_flops_not_a_key(validator):
    from test_flops_stats import session as counted

    doc = json.loads(export.to_json({}, summarize(counted("cuda:0", "NVIDIA H100 80GB HBM3", "bf16"))))
    validator.validate(doc)
    flops = doc["runs"][0]["flops"]
    assert set(flops["phases"]) == {"forward", "backward", "optimizer"}
    assert set(flops["step"]) == set(flops["phases"]["forward"]) == {"flops", "flop_s", "mfu_measured",
                                                                      "mfu_datasheet"}
    assert flops["step"]["flops"] == sum(p["flops"] or 0 for p in flops["phases"].values())


def test_a_version_1_file_is_upgraded_into_todays_shape(validator):
    old = json.loads(V1.read_text())
    assert "schema_version" not in old and "median_ms" in old["runs"][0]
    doc = schema.read(V1)
    validator.validate(doc)
    now = written(DATA / "session_tiny_mlp")
    for got, want in zip(doc["runs"], now["runs"], strict=True):
        assert list(got) == list(want)  # every key, in today's order
        for group in ("timing", "compare", "loss", "compile", "flops", "memory", "energy"):
            assert got[group] == want[group], group
        assert got["words"]["memory"] == want["words"]["memory"]
    assert doc["verdict"]["line"] == now["verdict"]["line"] and doc["why"] == now["why"]


def test_upgrade_leaves_todays_files_alone_and_refuses_a_newer_one():
    doc = {"schema_version": schema.SCHEMA_VERSION, "runs": []}
    assert schema.upgrade(doc) is doc
    with pytest.raises(ValueError, match="schema version 3"):
        schema.upgrade({"schema_version": 3})
