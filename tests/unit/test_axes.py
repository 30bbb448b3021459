"""--set axes, the sweep's plan and the budget: pure functions, no runs."""

from __future__ import annotations

import json

import pytest

from tuimon import axes
from tuimon.cli import budget
from tuimon.cli.args import budget_arg, horizon_arg, seconds_of
from tuimon.cli.sweep import skip
from tuimon.control import channel, daemon
from tuimon.control.supervisor import Plan
from tuimon.settings import RunSettings
from tuimon.variants import Variant, choices, product


def test_one_value_is_a_fixed_knob_a_list_is_an_axis():
    fixed, found = axes.parse_sets(["width=512", "depth=2,4,8", "act=relu,gelu", "name=a\\,b",
                                    "same=3,3"])
    assert fixed == {"width": "512", "name": "a,b", "same": "3"}
    assert found == {"depth": ["2", "4", "8"], "act": ["relu", "gelu"]}
    assert axes.baseline(found) == {"depth": "2", "act": "relu"}
    assert axes.parse_sets(["empty="]) == ({"empty": ""}, {})


@pytest.mark.parametrize(("items", "message"), [
    (["w=1", "w=2"], "--set w given twice"),
    (["w=1", "w=2,3"], "--set w given twice"),
    (["w=1,,2"], "an empty value in the list"),
    (["w=1,"], "an empty value in the list"),
])
def test_bad_sets_are_one_line(items, message):
    with pytest.raises(ValueError, match=message):
        axes.parse_sets(items)


def test_product_puts_the_baselines_and_each_eager_first():
    variants = product(["eager", "default"], ["fp32", "amp"], {"w": ["256", "512"]})
    assert [v.label for v in variants] == [
        "eager/fp32 · w=256", "default/fp32 · w=256", "eager/fp32 · w=512", "default/fp32 · w=512",
        "eager/amp · w=256", "default/amp · w=256", "eager/amp · w=512", "default/amp · w=512"]
    assert product(["eager"], ["fp32"]) == [Variant("eager", "fp32")]
    two = product(["eager"], ["fp32"], {"a": ["1", "2"], "b": ["x", "y"]})
    assert [v.axis_values for v in two] == [{"a": "1", "b": "x"}, {"a": "1", "b": "y"},
                                            {"a": "2", "b": "x"}, {"a": "2", "b": "y"}]


def test_labels_and_run_ids_name_the_values():
    v = Variant("default", "fp32", (("width", "512"), ("opt", "adam/w 2")))
    assert v.label == "default/fp32 · width=512 · opt=adam/w 2"
    assert v.run_id == "default-fp32-width_512-opt_adam_w_2"  # file-system safe
    assert Variant("eager", "amp").label == "eager/amp" and Variant("eager", "amp").run_id == "eager-amp"
    assert v.fields() == {"mode": "default", "precision": "fp32", "axes": {"width": "512", "opt": "adam/w 2"}}
    assert Variant("eager", "fp32").fields() == {"mode": "eager", "precision": "fp32"}
    assert Variant.from_fields(v.fields()) == v
    assert v.but(mode="eager").axes == v.axes


def test_a_variant_with_axes_crosses_the_socket_and_the_plan_file():
    v = Variant("default", "amp", (("width", "512"),))
    assert channel.decode_arg(json.loads(json.dumps(channel.encode_arg(v)))) == v
    assert channel.decode_arg({"mode": "eager", "precision": "fp32"}) == Variant("eager", "fp32")
    plan = Plan(RunSettings.make(recipe=__file__, steps=40, knobs=(("depth", "2"),), profile_at=5),
                variants=[v, Variant("eager", "fp32")],
                answer={"axes": {"width": ["256", "512"]}, "sweep": True}, deadline_s=60.0)
    back = daemon.plan_from_dict(json.loads(json.dumps(daemon.plan_to_dict(plan))))
    assert back.variants == plan.variants and back.answer == plan.answer and back.deadline_s == 60.0
    assert back.settings == plan.settings  # the runs' settings, through plan.json whole


def test_a_script_gets_its_knobs_in_its_command_or_its_environment():
    command = ["python", "train.py", "--batch-size", "{bs}", "--name=run-{bs}-{lr}"]
    cmd, env = axes.for_script(command, {"bs": "64", "lr": "0.1", "OMP_NUM_THREADS": "1"})
    assert cmd == ["python", "train.py", "--batch-size", "64", "--name=run-64-0.1"]
    assert env == {"OMP_NUM_THREADS": "1"}
    assert axes.for_script(["python", "-c", "d = {}"], {"x": "1"}) == (["python", "-c", "d = {}"], {"x": "1"})


def test_n_offers_the_focused_neighbours_first_and_nothing_shown():
    focused = Variant("default", "fp32", (("w", "512"),))
    shown = {Variant("eager", "fp32", (("w", "512"),)), focused}
    offered = choices(shown, focused, {"w": ["256", "512"]})
    assert offered[0] == Variant("reduce-overhead", "fp32", (("w", "512"),))
    assert not shown & set(offered)
    assert Variant("eager", "fp32", (("w", "256"),)) in offered
    assert Variant("eager", "amp", (("w", "256"),)) in offered
    assert len(offered) == 5 * 2 * 2 - 2
    script = Variant("eager", "script")
    assert all(v.precision == "script" for v in choices({script}, script, {}))


def test_horizon_and_budget_read_steps_and_lengths_of_time():
    assert horizon_arg("50000") == {"steps": 50000} and horizon_arg("50,000") == {"steps": 50000}
    assert horizon_arg("2h") == {"seconds": 7200.0} and horizon_arg("1h30m") == {"seconds": 5400.0}
    assert budget_arg("20m") == 1200.0 and budget_arg("600") == 600.0
    assert seconds_of("90sec") == 90 and seconds_of("2 min") == 120 and seconds_of("2x") is None


def test_on_cpu_cuda_graph_modes_are_skipped_when_their_twin_runs():
    variants = product(["eager", "default", "reduce-overhead", "max-autotune"], ["fp32", "amp"])
    kept, skipped = skip(variants, {"cuda": False, "amp_ok": True})
    assert [v.label for v in kept] == ["eager/fp32", "default/fp32", "max-autotune/fp32",
                                       "eager/amp", "default/amp", "max-autotune/amp"]
    assert [s["label"] for s in skipped] == ["reduce-overhead/fp32", "reduce-overhead/amp"]
    assert "CUDA graphs need a GPU" in skipped[0]["reason"]
    kept, skipped = skip(variants, {"cuda": True, "amp_ok": False, "amp_dtype": "float16",
                                    "amp_error": "RuntimeError: no"})
    assert [v.precision for v in kept] == ["fp32"] * 4
    assert skipped[0]["reason"] == "autocast (float16) does not work here: RuntimeError: no"


def test_the_budget_pays_starting_and_compiles_first_then_shares_the_rest(tmp_path):
    variants = product(["eager", "default"], ["fp32"], {"w": ["1", "2"]})
    plan = budget.share(600, variants, 1, 2, {("default", "fp32"): [20.0, 30.0, 40.0]})
    start = budget.START_S + budget.START_PER_RUN_S * 4 / 2
    assert plan["compile_s"] == 60.0 and plan["start_s"] == start
    assert plan["step_s"] == pytest.approx((600 - start - 60) * (1 - budget.MARGIN) / 4, abs=0.1)
    assert "from earlier sessions" in plan["text"]
    guessed = budget.share(600, variants, 1, 2, {})
    assert guessed["compile_s"] == 2 * budget.GUESS_S and "guessed" in guessed["text"]
    with pytest.raises(ValueError, match="is too short for 8 runs"):
        budget.share(100, variants, 2, 2, {})


def test_the_budget_learns_compile_times_from_earlier_sessions_of_the_same_recipe(tmp_path):
    def session(name, recipe, cache, compile_s):
        d = tmp_path / name
        d.mkdir()
        (d / "meta.json").write_text(json.dumps({"recipe": recipe, "cache": cache}))
        rows = [{"mode": "default", "precision": "fp32", "compile_s": compile_s, "median_ms": 1.0},
                {"mode": "eager", "precision": "fp32", "compile_s": None, "median_ms": 1.0}]
        if name.endswith("a"):  # an older session's summary.json (flat rows, version 1)
            (d / "summary.json").write_text(json.dumps({"runs": rows}))
            return
        runs = [{"mode": r["mode"], "precision": r["precision"], "compile": {"compile_s": r["compile_s"]},
                 "timing": {"median_ms": r["median_ms"]}, "warm": {"start": None}} for r in rows]
        (d / "summary.json").write_text(json.dumps({"schema_version": 2, "runs": runs}))

    cold = "fresh per run (cold compile)"
    session("20261101-a", "/r/tiny.py", cold, 12.0)
    session("20261102-b", "/r/tiny.py", "persistent /c (may be warm)", 2.0)
    session("20261103-c", "/r/other.py", cold, 99.0)
    (tmp_path / "20261104-broken").mkdir()
    session("20261105-d", "/r/tiny.py", cold, 14.0)
    seen = budget.history(tmp_path, {"recipe": "/r/tiny.py", "cache": cold})
    assert seen == {("default", "fp32"): [14.0, 12.0]}  # newest first, the older file read as well
    assert budget.compile_estimate(Variant("max-autotune", "amp"), seen) == (39.0, True)
