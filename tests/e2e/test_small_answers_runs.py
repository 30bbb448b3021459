"""The real runs of tests/unit/test_small_answers.py: the CLI in a child process, real scripts and compiles.
The pure tests of the same feature stay in tests/unit/test_small_answers.py."""

from __future__ import annotations

from test_compare import fake_session, times
from test_end_to_end import runs_of
from test_scripts import PY, script


def test_a_session_compared_with_itself_passes_the_guard(tuimon, tmp_path):
    runs = {f"{m}-fp32-{k}": (m, "fp32", {}, times(10.0 if m == "eager" else 9.5,
                                                   seed=k + 7 * (m == "eager")))
            for m in ("eager", "default") for k in (1, 2, 3)}
    a = fake_session(tmp_path / "a", runs, replicate={run: int(run[-1]) for run in runs})
    proc, _ = tuimon("compare", str(a), str(a), "--fail-if-slower", "5")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "B is the same recording as A" in proc.stdout


def test_step_zero_has_its_data_phase(tuimon):
    proc, session = tuimon("run", "--headless", "--modes", "eager", "--steps", "6", "--", PY,
                           script("plain_loop.py"), "--workers", "0")
    assert proc.returncode == 0, proc.stderr
    first = runs_of(session)[1]["eager-script"]["step"][0]
    # The first batch's wait (before step 0's clock) is start-up: data 0 in the step, not null.
    assert first["ph"][0] == 0 and first["data_ms"] == 0.0, first


def test_the_final_loss_says_which_of_several_it_is(tuimon):
    proc, session = tuimon("run", "--headless", "--modes", "eager", "--steps", "30", "--", PY,
                           script("gan.py"), "--log-every", "5")
    assert proc.returncode == 0, proc.stderr
    md = (session / "summary.md").read_text()
    # The discriminator's step() ends a step: its loss is errD, the generator's errG went with
    # the generator's step(); the script's printed Loss_D says the same (issue 40).
    assert "loss: the backward() loss before each step()" in md
    assert "(Generator, 1,410 parameters) every step" in md  # stepped after the lead's, each step
    assert "its printed D losses agree with tuimon's" in md  # Loss_D, not Loss_G beside it


def test_a_module_compiled_through_tuimons_wrapper_is_named_for_the_module(tuimon):
    proc, session = tuimon("run", "--headless", "--modes", "default", "--steps", "8", "--", PY,
                           script("env_knob.py"), "--steps", "100")
    assert proc.returncode == 0, proc.stderr
    compiles = [e for e in runs_of(session)[1]["default-script"].get("compile", []) if e.get("forward")]
    assert compiles and compiles[0]["frame"] == "Sequential", compiles
    assert compiles[0]["where"] is None  # tuimon's wrapper is no place in the user's code
