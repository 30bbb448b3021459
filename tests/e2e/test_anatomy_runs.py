"""Issue 40 on faithful reproductions of public scripts' loops, run for real: how tuimon read
each loop (the anatomy), and what that reading changes. A WGAN-GP whose critic steps every batch
and its generator every fifth (both compiled, but the critic a double backward reaches); a
GPT-style loop that sums four scaled micro-losses (the loss tuimon keeps is the one it prints);
a character model that samples between steps with a growing length under no_grad (those
compiles outside training); an RL agent used through its methods (its actor and critic, parts
of what its optimizer trains, compiled both). Every script test also checks the anatomy's
counts against its steps (tests/conftest.py's ``check_anatomy``)."""

from __future__ import annotations

import json
import sys

from conftest import SCRIPTS

PY = sys.executable


def session_of(tuimon, script: str, *args: str, modes: str = "default") -> tuple[dict, dict, str]:
    proc, session = tuimon("run", "--headless", "--modes", modes, "--", PY, str(SCRIPTS / script),
                           *args, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    evs = [json.loads(line) for line in (session / "events.jsonl").read_text().splitlines()]
    rows = {r["run"]: r for r in json.loads((session / "summary.json").read_text())["runs"]}
    return rows, {"events": evs}, (session / "summary.md").read_text()


def test_a_wgan_gp_is_read_as_its_critics_steps_and_both_modules_are_weighed(tuimon):
    rows, _, md = session_of(tuimon, "wgan_critic.py", "--batches", "60")
    a = rows["default-script"]["anatomy"]
    critic, generator = (next(o for o in a["optimizers"] if o["module"] == name)
                         for name in ("Critic", "Generator"))
    assert critic["lead"] and critic["steps"] == 60 and generator["steps"] == 12
    assert generator["every"] == 5.0
    assert a["backwards"] == {"1": 48, "2": 12} and a["loss_sums"] == {"1": 60}
    assert generator["compiled"] == "tuimon"
    assert critic["compiled"] == "double-backward"  # its gradient penalty: AOTAutograd cannot
    assert "Critic left eager: a double backward" in md
    assert "every 5 steps" in md


def test_accumulated_micro_losses_are_summed_as_the_script_prints_them(tuimon):
    rows, _, md = session_of(tuimon, "accum_scaled.py", "--steps", "12", modes="eager")
    a = rows["eager-script"]["anatomy"]
    assert a["loss_sums"] == {"4": 12} and a["backwards"] == {"4": 12}
    codes = [c["code"] for c in a["checks"]]
    assert "losses_agree" in codes  # the printed loss_accum
    assert "time_accounted" in codes  # and its process's time, in its steps and around them
    assert "the sum of its 4 backward() losses a step" in md


def test_sampling_between_steps_compiles_outside_training(tuimon):
    rows, run, md = session_of(tuimon, "char_sample.py", "--steps", "42", "--sample-every", "20",
                               "--sample-len", "4")
    r = rows["default-script"]
    assert r["anatomy"]["outside"]["no_grad"]["steps"] == [21, 41]  # the steps that held a sample
    assert r["compile"]["recompiles"] == 0 and r["compile"]["val_compiles"] >= 2
    outside = [e for e in run["events"] if e["type"] == "compile" and e.get("outside")]
    assert {e["outside"] for e in outside} == {"no_grad"}
    assert "recompiled" not in (r["words"]["unreliable"] or "")
    assert "compiles outside training" in md


def test_an_agent_used_through_its_methods_has_its_parts_compiled(tuimon):
    rows, _, md = session_of(tuimon, "agent_methods.py", "--iterations", "3")
    (o,) = rows["default-script"]["anatomy"]["optimizers"]
    assert o["module"] == "Sequential + Sequential" and o["compiled"] == "tuimon"
    assert rows["default-script"]["compile"]["graphs_fwd"] >= 2  # actor and critic
    assert rows["default-script"]["anatomy"]["steps"] == 24  # 3 iterations of 2 epochs x 4 minibatches
    # the rollouts of iterations 2 and 3, through the parts with gradients off: outside training
    assert rows["default-script"]["anatomy"]["outside"]["no_grad"]["steps"] == [8, 16]


def test_later_trainings_add_no_global_hook_and_each_new_models_forward_is_timed(tuimon):
    """simplest_kd's trainings one after another (a teacher, then students distilled from it):
    each new training's model is found with no global module hook (one armed then recompiled
    the students' compiled forward on Dynamo's guard on the hook dict, and was compiled itself as
    a frame, ``_first_call``, doing nothing), so the forward of every training is timed."""
    _, run, md = session_of(tuimon, "kd_trainings.py", "--steps", "8")
    evs = [e for e in run["events"] if e.get("run") == "default-script"]
    compiles = [e for e in evs if e["type"] == "compile"]
    assert {e["frame"] for e in compiles if e["forward"]} == {"forward"}  # no hook of tuimon's
    hooked = [e for e in evs if e["type"] == "recompile"
              if any("_global_forward_pre_hooks" in x for x in e["reasons"])]
    assert hooked == []
    assert [e["compile_id"] for e in compiles if e["forward"] and not e.get("validation")
            ] == ["0/0", "1/0", "2/0"]  # the teacher's, Student's, WideStudent's: once each
    steps = [e for e in evs if e["type"] == "step"]
    assert len(steps) == 40
    untimed = [s["i"] for s in steps if s["i"] % 8 >= 2 and not s["ph"][1]]
    assert untimed == []  # every training's forward, past its first step (found as it ends)
    assert "WideStudent compiled by tuimon" in md


def test_a_model_a_double_backward_runs_through_is_said_uncompilable_not_asked_for(tuimon):
    """pinn_burgers (N6): the net a double backward runs through is left eager, and the verdict
    and Why say it cannot be compiled, with eager's time, never "pass --compile-module NAME or
    call torch.compile" (the compile that cannot work); --compile-module of it is refused."""
    rows, _, md = session_of(tuimon, "pinn.py", "--steps", "24", modes="eager,default")
    assert rows["default-script"]["anatomy"]["optimizers"][0]["compiled"] == "double-backward"
    verdict = next(line for line in md.splitlines() if "Verdict:" in line)
    assert ("nothing was compiled in default/script — Sequential cannot be compiled: a double "
            "backward") in verdict and "eager/script measured" in verdict
    assert "--compile-module" not in verdict
    assert "keep it eager: torch.compile cannot differentiate a graph twice" in md
    proc, session = tuimon("run", "--headless", "--modes", "default", "--compile-module",
                           "Sequential", "--", PY, str(SCRIPTS / "pinn.py"), "--steps", "12")
    assert proc.returncode == 0, proc.stderr[-3000:]
    evs = [json.loads(line) for line in (session / "events.jsonl").read_text().splitlines()]
    notes = [e["text"] for e in evs if e["type"] == "warning"]
    assert any(t.startswith("--compile-module Sequential: Sequential left eager: a double "
                            "backward") for t in notes)
    assert not [e for e in evs if e["type"] == "compile"]  # no compile tried, none failed
    assert "Sequential cannot be compiled" in (session / "summary.md").read_text()
