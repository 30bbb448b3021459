"""Issue 35, FLOPs in real runs: a recipe's runner counts its FLOPs once, before its measured
steps, and its losses are the same step by step with and without the count (the extra step is
undone); a compiled variant counts its eager module; a script counts its trained module's
calls a step (gradient accumulation); summary.json carries the keys a plot reads."""

from __future__ import annotations

import json
import sys

from conftest import RECIPES, SCRIPTS, runner_events

TINY = str(RECIPES / "tiny_mlp.py")


def run(cache, mode: str = "eager", **settings) -> list[dict]:
    rc, got = runner_events(cache, recipe=TINY, run="r", mode=mode, device="cpu", steps=12,
                            auto_profile=False, **settings)
    assert rc == 0, [e for e in got if e["type"] == "failed"]
    return got


def test_the_count_runs_once_before_the_first_step_and_changes_no_loss(inductor_cache):
    counted = run(inductor_cache)
    plain = run(inductor_cache, count_flops=False)
    flops = [e for e in counted if e["type"] == "flops"]
    assert len(flops) == 1 and not [e for e in plain if e["type"] == "flops"]
    first_step = next(k for k, e in enumerate(counted) if e["type"] == "step")
    assert counted.index(flops[0]) < first_step  # outside every step: before the first
    f = flops[0]
    # TinyMLP at its CPU default (batch 32): 64 -> 256 -> 256 -> 10
    mms = [2 * 32 * 64 * 256, 2 * 32 * 256 * 256, 2 * 32 * 256 * 10]
    assert f["forward"] == sum(mms) and f["backward"] == sum(mms) + sum(mms[1:])
    assert f["step"] == f["forward"] + f["backward"] + f["optimizer"]
    assert f["precision"] == "fp32" and f["peak"]["peaks"]["fp32"] > 0
    losses = [[e["loss"] for e in got if e["type"] == "step"] for got in (counted, plain)]
    assert len(losses[0]) == 12 and losses[0] == losses[1]  # the measured steps: as without


def test_a_compiled_variant_counts_its_eager_module_and_compiles_nothing_for_it(inductor_cache):
    got = run(inductor_cache, mode="default")
    f = next(e for e in got if e["type"] == "flops")
    eager = next(e for e in run(inductor_cache) if e["type"] == "flops")
    assert (f["forward"], f["backward"], f["counted_on"]) == (eager["forward"], eager["backward"], "eager")
    # it compiles in its first step, after the count (which ran eager: nothing compiled for it)
    at = got.index(f)
    compiles = [k for k, e in enumerate(got) if e["type"] == "compile"]
    assert compiles and min(compiles) > at


def test_a_session_shows_flops_and_mfu_in_summary_json_and_the_table(tuimon):
    proc, session = tuimon(str(RECIPES / "tiny_mlp.py"), "--headless", "--steps", "40",
                           "--modes", "eager,default", "--no-auto-capture")
    assert proc.returncode == 0, proc.stderr[-2000:]
    doc = json.loads((session / "summary.json").read_text())
    for r in doc["runs"]:
        f = r["flops"]
        assert f["step"]["flops"] > 0 and f["counted_on"] == "eager" and f["precision"] == "fp32"
        assert f["phases"]["forward"]["flop_s"] > 0 and f["peak_measured"] > 0
        assert f["mfu_basis"] == "measured-cpu"
        assert 0 < f["step"]["mfu_measured"] < 1 and f["step"]["mfu_datasheet"] is None
    assert "MFU vs measured peak" in proc.stdout and "n/a on a CPU" in proc.stdout
    assert "## FLOPs and MFU" in (session / "summary.md").read_text()


def test_a_scripts_flops_count_each_call_of_a_step(tuimon):
    proc, session = tuimon("run", "--headless", "--steps", "12", "--modes", "eager",
                           "--no-auto-capture", "--", sys.executable, str(SCRIPTS / "grad_accum.py"),
                           "--epochs", "1")
    assert proc.returncode == 0, proc.stderr[-2000:]
    f = json.loads((session / "summary.json").read_text())["runs"][0]["flops"]
    # nn.Sequential(Linear(32, 64), ReLU, Linear(64, 10)), micro-batches of 16, 4 a step
    forward = 2 * 16 * 32 * 64 + 2 * 16 * 64 * 10
    assert f["calls"] == 4 and f["phases"]["forward"]["flops"] == 4 * forward
    assert f["phases"]["backward"]["flops"] == 4 * (2 * 16 * 32 * 64 + 2 * 2 * 16 * 64 * 10)
    assert f["phases"]["forward"]["mfu_measured"] is not None


def test_acting_calls_with_gradients_on_are_forwards_alone(tuimon):
    """A DQN's acting calls (batch 1, gradients on, never differentiated) are counted apart from
    its update (batch 32), and as forwards only: cleanrl's dqn.py read 4x its FLOPs when every
    call of a step was taken for the update."""
    proc, session = tuimon("run", "--headless", "--steps", "12", "--modes", "eager",
                           "--no-auto-capture", "--", sys.executable, str(SCRIPTS / "acting_calls.py"))
    assert proc.returncode == 0, proc.stderr[-2000:]
    f = json.loads((session / "summary.json").read_text())["runs"][0]["flops"]
    per_row = 2 * 8 * 64 + 2 * 64 * 4  # Linear(8, 64) and Linear(64, 4), one row
    assert f["calls"] == 5 and f["phases"]["forward"]["flops"] == (32 + 4) * per_row
    # the update's backward alone: both weights' gradients, the second layer's input gradient
    assert f["phases"]["backward"]["flops"] == 32 * (per_row + 2 * 64 * 4)
    assert f["backed"] == 1 and "×5 calls (1 differentiated)" in proc.stdout


def test_a_count_of_the_lead_module_alone_shows_no_rate_and_says_why(tuimon):
    """A WGAN's critic steps every batch and leads; its generator (another optimizer's) is not in
    the count, so neither FLOP/s nor MFU is worked out from it: the step's time holds the
    generator's work too."""
    proc, session = tuimon("run", "--headless", "--steps", "12", "--modes", "eager",
                           "--no-auto-capture", "--", sys.executable, str(SCRIPTS / "wgan_critic.py"))
    assert proc.returncode == 0, proc.stderr[-2000:]
    f = json.loads((session / "summary.json").read_text())["runs"][0]["flops"]
    assert f["uncounted"] == ["Generator"] and f["step"]["flops"] > 0
    assert f["step"]["flop_s"] is None and f["step"]["mfu_measured"] is None
    assert "the step also trains Generator" in proc.stdout
