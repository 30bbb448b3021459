"""Issue 33, the wrong answers the public-script sweep found (bench/RESULTS.md, "public scripts,
unchanged"), each on a faithful reproduction under tests/scripts/: a crash only under tuimon with
a wrapper that forwards its attribute sets (Lightning Fabric), a second optimizer's training
unseen (mnist_forward_forward), the backward() count said from the first step (dcgan), the first
batch lost without an optimizer (regression), and step 0 that began at an eval pass's compile in
one variant only (nanoGPT)."""

from __future__ import annotations

import re

from test_end_to_end import runs_of
from test_scripts import PY, script


def run_of(tuimon, name: str, *args: str, modes: str = "eager", steps: str | None = None):
    length = ["--steps", steps] if steps else []
    proc, session = tuimon("run", "--headless", "--modes", modes, *length, "--", PY, script(name), *args)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return session, runs_of(session)[1]


def notes(kinds: dict) -> list[str]:
    return [w["text"] for w in kinds.get("warning", [])]


def test_a_wrapper_that_forwards_attribute_sets_trains_as_alone(tuimon):
    session, runs = run_of(tuimon, "setattr_wrapper.py")
    kinds = runs["eager-script"]
    assert "failed" not in kinds and len(kinds["step"]) == 60
    log = (session / "logs" / "eager-script.log").read_text()
    printed = [float(x) for x in re.findall(r"loss (\d+\.\d+)", log)]
    assert [round(kinds["step"][i]["loss"], 6) for i in (0, 20, 40)] == printed
    assert kinds["step"][-1]["ph"][1] is not None  # its forward was timed, through the wrapper


def test_a_second_optimizer_that_trains_after_the_first_is_seen(tuimon):
    _, runs = run_of(tuimon, "layer_by_layer.py", "--steps", "40")
    kinds = runs["eager-script"]
    steps = kinds["step"]
    # 80 optimizer steps: 40 of the first layer, 11 lumped into the step where the second takes
    # over (kept apart), then the second layer's 29.
    assert len(steps) == 40 + 1 + 29, len(steps)
    assert [s["i"] for s in steps if s.get("gap")] == [40]
    assert any("training moved on to it" in n for n in notes(kinds))
    # One backward() a step: the take-over step's lumped 11 are no gradient accumulation.
    assert not [n for n in notes(kinds) if "backward() calls per optimizer step" in n]


def test_the_backward_count_is_a_steps_not_the_first(tuimon):
    session, runs = run_of(tuimon, "three_losses.py")
    said = [n for n in notes(runs["eager-script"]) if "backward() calls per optimizer step" in n]
    assert said and said[0].startswith("3 backward() calls"), said
    # The discriminator's step() ends a step: its loss errD_real + errD_fake, errG the generator's.
    assert "(the sum of its 2 backward() losses a step)" in (session / "summary.md").read_text()


def test_no_optimizer_every_batch_is_a_step(tuimon):
    session, runs = run_of(tuimon, "no_optimizer_batches.py")
    steps = runs["eager-script"]["step"]
    log = (session / "logs" / "eager-script.log").read_text()
    printed = [float(x) for x in re.findall(r"loss (\d+\.\d+)", log)]
    assert len(steps) == len(printed) == 30
    assert [round(s["loss"], 6) for s in steps] == printed  # batch 1's loss too


def test_an_eval_before_the_first_step_is_outside_step_0_in_every_variant(tuimon):
    _, runs = run_of(tuimon, "eval_first.py", modes="eager,default")
    for run in ("eager-script", "default-script"):
        first = runs[run]["step"][0]
        assert not first.get("gap"), (run, first)  # the iter-0 eval came before training started
        assert len(first.get("ph") or ()) < 5 or not first["ph"][4], (run, first)  # no eval in it
