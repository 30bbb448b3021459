"""tuimon try's fixes applied for real (issue 34), on small models on the CPU, few steps, the
shared Inductor cache: a recipe's runner started directly with the fixes in its settings (as the
supervisor starts it: the reserved axis ``fix``), and a script through ``tuimon run --set
fix=...``, whose fixes must leave no trace in the user's directory or in the environment of the
processes it starts. The pieces on their own are in tests/unit/test_fixes_child.py."""

from __future__ import annotations

import json
import shutil
import sys

from conftest import SCRIPTS, TEST_RECIPES, runner_events
from test_end_to_end import runs_of
from test_files_apart import tree

from tuimon.analysis import summarize

BLOCKS = str(TEST_RECIPES / "blocks.py")


def forward_of(path, cls: str) -> str:
    """'file.py:LINE' of ``cls.forward`` in ``path``: where its compile says it starts."""
    lines = path.read_text().splitlines()
    start = lines.index(next(line for line in lines if line.startswith(f"class {cls}(")))
    line = next(i for i in range(start, len(lines)) if "def forward" in lines[i]) + 1
    return f"{path.name}:{line}"


def runner(recipe: str, fix: str, cache, *knobs: str, mode: str = "default", steps: int = 4):
    """One recipe run (python -m tuimon.runner) with ``fix`` as its variant's fix axis: its
    events by type."""
    rc, got = runner_events(cache, recipe=recipe, run="r", mode=mode, device="cpu", steps=steps,
                            warmup="0", axes=(("fix", fix),),
                            knobs=tuple(tuple(k.split("=", 1)) for k in knobs), auto_profile=False)
    assert rc == 0, [e for e in got if e["type"] == "failed"]
    by_type: dict[str, list] = {}
    for e in got:
        by_type.setdefault(e["type"], []).append(e)
    return by_type, got


def notes(kinds) -> dict[str, tuple[bool, str]]:
    return {w["fix"]: (w["applied"], w["text"]) for w in kinds.get("warning", []) if w.get("fix")}


def fixes_of(evs) -> dict[str, dict]:
    """Each run's fixes as the summary reads them (stats/apply.py), for the runs that had some."""
    return {r.run: r.fixes for r in summarize(evs).runs if r.fixes}


def forward_compiles(kinds) -> list[str]:
    return [e["where"].rsplit("/", 1)[-1] for e in kinds.get("compile", []) if e.get("forward")]


def test_regional_compiles_the_repeated_block_not_the_model(inductor_cache):
    kinds, got = runner(BLOCKS, "regional", inductor_cache, "depth=4")
    assert kinds["run_started"][0]["fixes"] == ["regional"]
    assert kinds["run_started"][0]["extra"] == {"depth": "4"}  # the fix axis is no knob
    assert not any("never read" in w["text"] for w in kinds.get("warning", []))
    assert notes(kinds) == {"regional": (True, "fix regional: compiled 4 blocks of Block one by "
                                               "one, not the model whole")}
    # One compile of Block.forward serves the four blocks; Net.forward runs eager.
    assert forward_compiles(kinds) == [forward_of(TEST_RECIPES / "blocks.py", "Block")]
    assert kinds["finished"][0]["recompiles"] == 0
    (outcome,) = fixes_of(got).values()
    assert outcome["regional"]["applied"]
    # Every compiled run says its model's repeated block (what tuimon try's plan weighs).
    (row,) = summarize(got).runs
    assert row.repeated == {"model": "Net", "block": "Block", "count": 4}


def test_regional_without_a_repeated_block_compiles_the_model_whole(inductor_cache):
    kinds, got = runner(BLOCKS, "regional", inductor_cache, "depth=2", "repeated=0", steps=2)
    assert notes(kinds) == {"regional": (False, "fix regional: no repeated block in Net: the "
                                                "model compiled whole")}
    assert forward_compiles(kinds) == [forward_of(TEST_RECIPES / "blocks.py", "Net")]
    assert fixes_of(got)["r"]["regional"] == {
        "applied": False, "text": "no repeated block in Net: the model compiled whole"}
    assert summarize(got).runs[0].repeated == {"model": "Net", "block": None, "count": 0}


def test_dynamic_ends_the_recompiles_and_scalars_the_graph_break(inductor_cache):
    """Batches of varying length recompile, a .item() in forward breaks the graph; each fix
    takes its own away (depth 1: the smallest model that shows both)."""
    knobs = ("depth=1", "varlen=1", "item=1")
    plain, _ = runner(BLOCKS, "none", inductor_cache, *knobs)
    assert "fixes" not in plain["run_started"][0] and not notes(plain)
    assert plain["finished"][0]["recompiles"] >= 1 and plain["finished"][0]["graph_breaks"] >= 1
    dynamic, _ = runner(BLOCKS, "dynamic", inductor_cache, *knobs)
    assert notes(dynamic) == {"dynamic": (True, "fix dynamic: compiled with dynamic=True, duck sizing off")}
    assert dynamic["finished"][0]["recompiles"] == 0 and "recompile" not in dynamic
    scalars, _ = runner(BLOCKS, "scalars", inductor_cache, *knobs)
    assert notes(scalars)["scalars"][0] is True
    assert scalars["finished"][0]["graph_breaks"] == 0 and "graph_break" not in scalars


def test_dynamic_holds_a_batch_the_size_of_the_features(inductor_cache):
    """shape_change.py's batches of 8 rows of 8 features, then 12: under dynamic=True alone torch
    gives the two 8s one symbol (duck sizing), the Linear(8, ...) pins it, and the batch of 12
    recompiles; the fix turns duck sizing off, so the batch stays symbolic (bench/RESULTS.md)."""
    recipe = str(TEST_RECIPES / "shape_change.py")
    plain, _ = runner(recipe, "none", inductor_cache)
    assert plain["finished"][0]["recompiles"] == 1
    dynamic, _ = runner(recipe, "dynamic", inductor_cache)
    assert dynamic["finished"][0]["recompiles"] == 0 and "recompile" not in dynamic


def test_foreach_channels_last_and_amp_on_an_eager_run(inductor_cache):
    kinds, got = runner(BLOCKS, "foreach+channels-last+amp+regional", inductor_cache, "conv=1",
                        "depth=1", mode="eager", steps=3)
    assert notes(kinds) == {
        "regional": (False, "fix regional: a compiled variant's only"),
        "foreach": (True, "fix foreach: AdamW made with foreach=True"),
        "channels-last": (True, "fix channels-last: the model and its 4-D inputs in channels_last"),
        "amp": (True, "fix amp: autocast to bfloat16 around the forward and loss")}
    assert kinds["run_started"][0]["amp_dtype"] == "bfloat16"  # the trainer's amp path
    assert kinds["finished"][0]["reason"] == "steps"
    # channels-last on a model without a convolution changes nothing, and says so
    kinds, _ = runner(BLOCKS, "channels-last", inductor_cache, "depth=1", mode="eager", steps=2)
    assert notes(kinds)["channels-last"][0] is False


def test_a_scripts_fixes_apply_and_leave_no_trace(tuimon, tmp_path):
    """The script never calls torch.compile: tuimon's auto-compile compiles its blocks one by
    one after the model's first call; its DataLoader gets workers, its AdamW foreach, its model's
    calls autocast. The user's directory is as it was, and a process the script starts sees the
    same environment under the fixes as without them."""
    user = tmp_path / "project"
    user.mkdir()
    shutil.copy(SCRIPTS / "blocks_loader.py", user)
    (user / "data.txt").write_text("the user's own file\n")
    before = tree(user)
    fix = "regional+loader+foreach+amp"
    proc, session = tuimon("run", "--headless", "--modes", "default", "--steps", "10",
                           "--no-probes", "--set", f"fix=none,{fix}", "--", sys.executable,
                           "blocks_loader.py", "--epochs", "3", "--env-out", "env.json", cwd=user,
                           timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert tree(user) == before  # the checkpoint and env.json went to each run's own place
    evs, runs = runs_of(session)
    plain, fixed = runs["default-script-fix_none"], runs[f"default-script-fix_{fix}"]
    assert fixed["run_started"][0]["fixes"] == ["regional", "loader", "foreach", "amp"]
    said = notes(fixed)
    assert all(applied for applied, _ in said.values()) and set(said) == set(fix.split("+"))
    assert said["loader"][1].startswith("fix loader: a DataLoader over TensorDataset made with "
                                        "num_workers=")
    assert not notes(plain)
    assert forward_compiles(plain) == [forward_of(SCRIPTS / "blocks_loader.py", "Net")]  # whole
    assert forward_compiles(fixed) == [forward_of(SCRIPTS / "blocks_loader.py", "Block")]
    assert fixed["finished"][0]["recompiles"] == 0  # compiled under autocast from the start
    logs = session / "logs"
    assert "workers: 0" in (logs / "default-script-fix_none.log").read_text()
    assert "workers: 0" not in (logs / f"default-script-fix_{fix}.log").read_text()
    outcomes = fixes_of(evs)
    assert set(outcomes) == {f"default-script-fix_{fix}"}
    # tuimon's auto-compile says the model's repeated block, fix or no fix (a model event)
    assert [e["repeated"] for e in plain["model"]] == [{"model": "Net", "block": "Block", "count": 4}]

    def env_of(run):
        (path,) = (session / "files" / run).rglob("env.json")
        return json.loads(path.read_text())

    env_plain, env_fixed = env_of("default-script-fix_none"), env_of(f"default-script-fix_{fix}")
    assert "TUIMON_SETTINGS" not in env_fixed and "fix" not in env_fixed
    assert set(env_fixed) == set(env_plain)
    per_run = {"PWD", "OLDPWD", "TUIMON_ARTIFACTS", "_TORCHINDUCTOR_PYOBJECT_TENSOR_DATA_PTR"}
    assert {k for k in env_fixed if env_fixed[k] != env_plain[k]} <= per_run
