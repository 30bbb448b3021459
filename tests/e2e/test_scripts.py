"""`tuimon run -- python train.py`: real scripts that know nothing of tuimon (tests/scripts/),
run through the real CLI, read back from the store."""

from __future__ import annotations

import json
import os
import statistics
import sys
import threading
import time
from pathlib import Path

import pytest
from conftest import SCRIPTS
from test_control import Live
from test_end_to_end import runs_of

from tuimon import events
from tuimon.cli.script import check_command
from tuimon.control.child import log_tail
from tuimon.control.supervisor import Plan, Supervisor
from tuimon.envvars import PEAK_CACHE
from tuimon.sessiondir.store import SessionStore
from tuimon.settings import RunSettings
from tuimon.variants import SCRIPT, Variant

PY = sys.executable  # the interpreter with torch (a user runs the python on their PATH)


def script(name: str) -> str:
    return str(SCRIPTS / name)


def eager_run(tuimon, steps: int, name: str, *script_args: str, **kwargs):
    """``tuimon run --headless --modes eager --steps N -- python NAME ARGS``: (session, the
    run's events by kind)."""
    proc, session = tuimon("run", "--headless", "--modes", "eager", "--steps", str(steps), "--", PY,
                           script(name), *script_args, **kwargs)
    assert proc.returncode == 0, proc.stderr
    return session, runs_of(session)[1]["eager-script"]


def notes_of(kinds: dict) -> list[str]:
    return [w["text"] for w in kinds.get("warning", [])]


def test_plain_loop_with_workers_validation_and_a_checkpoint(tuimon, tmp_path):
    ckpt = tmp_path / "model.pt"
    # A peak cache of its own, empty: one variant measures the GEMM peak inside its run, in its
    # first epoch, and must train on the same shuffles after it as the other (the losses below)
    proc, session = tuimon("run", "--headless", "--modes", "eager,default", "--steps", "130",
                           "--turn-steps", "50", "--", PY, script("plain_loop.py"), "--ckpt", str(ckpt),
                           env={PEAK_CACHE: str(tmp_path / "peaks.json")})
    assert proc.returncode == 0, proc.stderr
    evs, runs = runs_of(session)
    assert set(runs) == {"eager-script", "default-script"}
    meta = json.loads((session / "meta.json").read_text())
    assert meta["command"] == [PY, script("plain_loop.py"), "--ckpt", str(ckpt)]
    for run, kinds in runs.items():
        assert len(kinds["run_started"]) == 1  # the DataLoader workers said nothing
        assert kinds["run_started"][0]["precision"] == "script"
        # Taking turns: the script's own timers see the waits inside optimizer.step().
        assert any("the script waits at its step boundary (inside optimizer.step()" in n
                   for n in kinds["run_started"][0]["notes"])
        steps = kinds["step"]
        assert [s["i"] for s in steps] == list(range(130))
        assert kinds["finished"][0]["reason"] == "steps"
        # 56 batches an epoch: the steps that held a validation pass are gaps, kept apart
        gaps = [s["i"] for s in steps if s.get("gap")]
        assert gaps and all(g % 56 == 0 for g in gaps), gaps
        plain = [s for s in steps if not s.get("gap")]
        assert statistics.median(s["n"] for s in plain) == 32
        assert all(s["loss"] is not None and 0 < s["loss"] < 5 for s in plain)
        log = (session / "logs" / f"{run}.log").read_text()
        # Ended at a step boundary the way Ctrl-C would: the script's own handlers ran.
        assert "interrupted: saving checkpoint" in log and "cleanup done" in log
    # Its checkpoint, named by an absolute path in the working directory: each run's own.
    assert not ckpt.exists()
    outputs = json.loads((session / "summary.json").read_text())["files"]["outputs"]
    assert [[f["path"] for f in o["files"]] for o in outputs] == [["model.pt"], ["model.pt"]]
    assert all((Path(o["dir"]) / "model.pt").is_file() for o in outputs)
    # The script never compiles: tuimon compiled the module the optimizer trains.
    compiled = runs["default-script"]
    assert any("tuimon compiled Sequential" in t for t in notes_of(compiled))
    assert compiled["step"][1].get("compile_ms", 0) > 0  # the first call ran eager
    assert "compile" in compiled and "compile" not in runs["eager-script"]
    # Same seed, same batches: the losses agree step by step.
    e = [s["loss"] for s in runs["eager-script"]["step"]]
    c = [s["loss"] for s in compiled["step"]]
    assert max(abs(a - b) for a, b in zip(e, c, strict=True)) < 1e-3
    measured = [json.loads(line) for line in (session / "events.jsonl").open()]
    assert [f["peak"]["cached"] for f in measured if f["type"] == "flops"].count(False) == 1
    summary = json.loads((session / "summary.json").read_text())
    rows = {r["run"]: r for r in summary["runs"]}
    assert rows["eager-script"]["timing"]["median_ms"] > 0 and rows["default-script"]["compare"]["speedup"]
    assert rows["eager-script"]["turns"] == 3
    md = (session / "summary.md").read_text()
    assert f"- script: `{PY} {script('plain_loop.py')}" in md and "samples/s" in md


def test_amp_with_a_grad_scaler_that_skips_steps(tuimon):
    _, kinds = eager_run(tuimon, 40, "amp_scaler.py", "--nan-every", "5")
    steps = kinds["step"]
    assert len(steps) == 40  # a skipped optimizer.step() still ends its step
    assert any("GradScaler skipped" in t for t in notes_of(kinds))
    finite = [s["loss"] for s in steps if s["loss"] is not None]
    assert finite and all(0 < x < 5 for x in finite)  # the unscaled loss, not loss * 65536
    assert sum(1 for s in steps if s["loss"] is None) >= 6  # the infinite ones: null


def test_two_optimizers_and_a_profiler_capture(tuimon):
    proc, session = tuimon("run", "--headless", "--modes", "eager", "--steps", "60",
                           "--profile-at", "20", "--", PY, script("gan.py"))
    assert proc.returncode == 0, proc.stderr
    _, runs = runs_of(session)
    kinds = runs["eager-script"]
    assert len(kinds["step"]) == 60  # one step = one pass of the first optimizer stepped
    assert all(s["n"] == 0 for s in kinds["step"])  # no DataLoader: steps per second
    summary = json.loads((session / "summary.json").read_text())
    assert "steps/s" in (session / "summary.md").read_text()
    assert summary["runs"][0]["timing"]["median_ms"] > 0
    done = [p for p in kinds["profile"] if p.get("state") == "done"]
    assert done and done[0]["top_ops"], kinds["profile"]
    assert [s["i"] for s in kinds["step"] if s.get("profiled")] == [21, 22, 23, 24, 25]


def test_gradient_accumulation_counts_optimizer_steps(tuimon):
    _, kinds = eager_run(tuimon, 12, "grad_accum.py")
    assert len(kinds["step"]) == 12
    assert all(s["n"] == 64 for s in kinds["step"][1:])  # 4 micro-batches of 16
    assert any("4 backward() calls per optimizer step" in t for t in notes_of(kinds))


def test_python_dash_m_a_package(tuimon):
    proc, session = tuimon("run", "--headless", "--modes", "eager", "--duration", "2", "--", PY,
                           "-m", "mypkg.train", "--config", "mypkg/cfg.json", cwd=SCRIPTS)
    assert proc.returncode == 0, proc.stderr
    assert session.name.endswith("-train")
    _, runs = runs_of(session)
    assert runs["eager-script"]["finished"][0]["reason"] == "duration"
    assert len(runs["eager-script"]["step"]) > 20


def test_a_script_that_compiles_itself_gets_each_variants_mode(tuimon):
    proc, session = tuimon("run", "--headless", "--modes", "eager,default", "--steps", "40",
                           "--", PY, script("compiled.py"))
    assert proc.returncode == 0, proc.stderr
    _, runs = runs_of(session)
    eager, default = runs["eager-script"], runs["default-script"]
    assert any("disabled in the eager variant" in t for t in notes_of(eager))
    assert "compile" not in eager and not any(s.get("compile_ms") for s in eager["step"])
    assert "compiled with mode=max-autotune-no-cudagraphs: Sequential" in (
        session / "logs" / "eager-script.log").read_text()
    assert any("runs with mode='default'" in t for t in notes_of(default))
    assert "OptimizedModule" in (session / "logs" / "default-script.log").read_text()
    assert default["step"][0].get("compile_ms", 0) > 0
    assert not any("tuimon compiled" in t for t in notes_of(default))  # not twice


def test_a_crashing_script_is_contained_with_its_line(tuimon):
    proc, session = tuimon("run", "--headless", "--modes", "eager", "--", PY, script("crash.py"))
    assert proc.returncode == 1
    _, runs = runs_of(session)
    failed = runs["eager-script"]["failed"][0]
    assert failed["stage"] == "step" and failed["error"] == "ValueError"
    assert failed["message"] == "bad batch at epoch 0 step 7"
    assert failed["where"] == "crash.py:9"  # the raise in check(), the deepest frame of the script
    assert "Traceback" in failed["traceback"]
    assert len(runs["eager-script"]["step"]) == 7  # what it measured before failing is kept
    assert "failed: ValueError: bad batch" in (session / "summary.md").read_text()


def test_an_error_in_colour_is_read_as_its_text(tuimon, tmp_path):
    """An exception message or a log line with terminal escapes ("\\x1b[1m...\\x1b[0m"): its
    text, in the event, the summary and the console."""
    proc, session = tuimon("run", "--headless", "--modes", "eager", "--", PY, script("crash.py"),
                           "--color")
    failed = runs_of(session)[1]["eager-script"]["failed"][0]
    assert failed["message"] == "bad batch at epoch 0 step 7"
    assert failed["what"] == "ValueError: bad batch at epoch 0 step 7"
    assert "\x1b" not in failed["traceback"]
    assert "\x1b" not in (session / "summary.md").read_text() and "[1m" not in proc.stdout
    assert "FAILED (step at crash.py:9): ValueError: bad batch at epoch 0 step 7" in proc.stdout
    log = tmp_path / "coloured.log"  # a script that logs its error in colour and exits 1
    log.write_text("epoch 0\n\x1b[31mERROR\x1b[0m: \x1b[1mno such file: data.csv\x1b[0m\n")
    assert log_tail(log).splitlines()[-1] == "ERROR: no such file: data.csv"


def test_a_script_without_an_optimizer_says_so(tuimon):
    proc, session = tuimon("run", "--headless", "--modes", "eager", "--", PY,
                           script("no_optimizer.py"), "--seconds", "4",
                           env={"TUIMON_NO_STEP_S": "1.5"})
    assert proc.returncode == 0, proc.stderr
    _, runs = runs_of(session)
    kinds = runs["eager-script"]
    assert kinds["finished"][0]["reason"] == "script ended"
    assert "step" not in kinds
    assert any("no optimizer step in 1.5 s: tuimon times training loops that call "
               "optimizer.step()" in w["text"] for w in kinds["warning"])


def test_a_first_optimizer_step_still_compiling_is_no_missing_step():
    """The no-step line watches the clock from the start; a compile under way (a script that
    compiles its optimizer step, a big model's first forward) is not "no optimizer step"."""
    from tuimon.runner.compile_watch import CompileWatch
    from tuimon.runner.control_lines import ControlLines
    from tuimon.runner.emitter import Emitter
    from tuimon.runner.script.ending import no_step_yet
    from tuimon.runner.script.steps import ScriptSteps

    watch = CompileWatch()
    run = ScriptSteps(RunSettings.make(mode="default", precision="script"), Emitter(None, "r"),
                      ControlLines(None), watch)
    run.booted_at -= 5.0  # started 5 s ago
    watch._start()
    assert no_step_yet(run, 2.0) is None  # compiling for 5 s: not known yet
    watch._since -= 4.0
    watch._end()  # a 4 s compile: 1 s without a step
    assert no_step_yet(run, 2.0) is None
    run.booted_at -= 2.0
    assert no_step_yet(run, 2.0) is True  # 3 s past the compile


def test_a_compiled_optimizer_step_does_not_trace_tuimons_hook(tuimon):
    """torch.compile over opt.step() traces the step's post hooks: tuimon's boundary was
    compiled in pieces (graph breaks in tuimon/runner/, a recompile as its counters moved)."""
    proc, session = tuimon("run", "--headless", "--modes", "default", "--steps", "30", "--", PY,
                           script("compiled_opt_step.py"), "--backend", "eager")
    assert proc.returncode == 0, proc.stderr
    kinds = runs_of(session)[1]["default-script"]
    assert len(kinds["step"]) == 30
    assert not [b for b in kinds.get("graph_break", []) if "/tuimon/" in (b.get("file") or "")]
    assert "recompile" not in kinds
    assert not any(s.get("compile_ms") for s in kinds["step"][2:])


def test_a_prefetcher_counts_the_batches_each_step_trained_on(tuimon):
    """A prefetcher fetches each step's batch in the step before: counted as fetched, an epoch's
    first step held two batches and its last none. 100 samples in batches of 16: six of 16 and
    one of 4 an epoch. Two sanity validation batches first (Lightning's way) are not samples,
    nor are those of a validation pass over the training data after each epoch."""
    _, kinds = eager_run(tuimon, 16, "prefetch_loop.py", "--sanity-batches", "2")
    assert [s["n"] for s in kinds["step"]] == ([16] * 6 + [4]) * 2 + [16] * 2
    _, kinds = eager_run(tuimon, 16, "prefetch_loop.py", "--val-batch-size", "50")
    assert [s["i"] for s in kinds["step"] if s.get("gap")] == [7, 14]  # each epoch's first
    assert [s["n"] for s in kinds["step"] if not s.get("gap")] == [16] * 6 + [4] + [16] * 5 + [4] + [16]
    assert kinds["run_started"][0]["notes"] == []  # one run: no turns to wait for


def test_an_optimizer_that_is_not_torch_optim_is_timed_by_backward(tuimon):
    _, kinds = eager_run(tuimon, 25, "custom_optimizer.py")
    assert len(kinds["step"]) == 25
    assert any("no torch.optim optimizer was made" in t for t in notes_of(kinds))


def test_a_shebang_script_and_one_that_ends_by_itself(tuimon):
    path = os.pathsep.join([os.path.dirname(PY), os.environ.get("PATH", "")])
    proc, session = tuimon("run", "--headless", "--modes", "eager", "--", script("shebang.py"),
                           "--epochs", "2", env={"PATH": path})
    assert proc.returncode == 0, proc.stderr
    _, runs = runs_of(session)
    kinds = runs["eager-script"]
    assert kinds["finished"][0]["reason"] == "script ended"
    assert len(kinds["step"]) == 64  # 2 epochs of 32 steps, every one
    assert kinds["run_exited"][0]["returncode"] == 0


def test_a_data_bound_script_shows_its_data_wait(tuimon):
    _, kinds = eager_run(tuimon, 30, "slow_data.py", "--item-ms", "1")
    steps = kinds["step"][2:]
    # 32 items of 1 ms: at least 32 ms of each step is waiting for the batch, against well
    # under 1 ms of compute on a quiet machine (a loaded one stretches the compute, hence 0.5)
    assert statistics.median(s["data_ms"] for s in steps) >= 32
    assert statistics.median(s["data_ms"] / s["ms"] for s in steps) > 0.5


def test_a_script_that_fails_before_its_first_step_is_one_line(tuimon):
    proc, _ = tuimon("run", "--headless", "--", PY, script("plain_loop.py"), "--nope")
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert "the script exited with code 2 before its first step" in proc.stderr
    assert "unrecognized arguments: --nope" in proc.stderr


@pytest.mark.parametrize(("args", "expected"), [
    (["--"], "no command after --"),
    (["--", "ls", "-l"], "ls is not a Python program"),
    (["--", "no-such-command-here"], "command not found: no-such-command-here"),
    (["--", PY, "missing.py"], "script not found: missing.py"),
    (["--", PY], "python without a script"),
    (["--precision", "amp", "--", PY, script("gan.py")], "a script owns its autocast"),
    (["--set", "bs=32,,64", "--", PY, script("gan.py")], "an empty value in the list"),
    (["--device", "cpu", "--", PY, script("gan.py")], "a script picks its own device"),
    ([str(SCRIPTS / "gan.py"), "--", PY, script("gan.py")], "give a recipe or a command"),
])
def test_bad_script_input_is_one_line(tuimon, args, expected):
    proc, session = tuimon("run", "--headless", *args)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and expected in proc.stderr, proc.stderr
    assert session is None  # nothing launched, nothing written


def test_lightning_trainer_fit(tuimon):
    pytest.importorskip("lightning")
    proc, session = tuimon("run", "--headless", "--modes", "eager,default", "--steps", "40", "--",
                           PY, script("lightning_fit.py"), timeout=600)
    assert proc.returncode == 0, proc.stderr
    _, runs = runs_of(session)
    for kinds in runs.values():
        assert len(kinds["step"]) == 40 and kinds["finished"][0]["reason"] == "steps"
        assert all(s["loss"] is not None for s in kinds["step"])
        assert kinds["step"][32].get("gap")  # the validation loop after 32 training batches
        # Lightning's sanity check (2 validation batches of 128) before step 0, and its fetcher
        # a batch ahead: each step trained on one batch of 32.
        assert {s["n"] for s in kinds["step"]} == {32}
    # Lightning calls the LightningModule itself: that is the module tuimon compiles.
    compiled = runs["default-script"]
    assert any("tuimon compiled Classifier" in t for t in notes_of(compiled))
    # The sanity check (a validation pass before the first step) makes step 0 a gap; tuimon
    # compiles the module as the first step ends (every optimizer's module found by then), so
    # step 1 compiles, and the validation loop after 32 batches compiles apart.
    assert compiled["step"][0].get("gap") and compiled["step"][1].get("compile_ms")
    assert [c for c in compiled["compile"] if c.get("validation")]
    assert all(e.get("validation") or e.get("after_validation") for e in compiled["recompile"])
    row = next(r for r in json.loads((session / "summary.json").read_text())["runs"]
               if r["run"] == "default-script")
    comp = row["compile"]
    assert comp["recompiles"] == 0 and comp["val_compiles"] >= 1 and "grad_mode" in row["words"]["val_guards"]


class ScriptLive(Live):
    """test_control's kept-open session on a thread, over a script plan."""

    def __init__(self, path, plan):  # noqa: D107 - Live's fields, another plan
        self.store = SessionStore.create(path, "script")
        self.events, self.status = [], []
        self.sup = Supervisor(self.store, plan, self.events.extend)
        self.thread = threading.Thread(target=lambda: self.status.append(self.sup.run(keep_open=True)))
        self.thread.start()


def test_pause_resume_restart_and_stop_a_script(tmp_path, inductor_cache):
    """The TUI's keys on a script run, through the supervisor's API (as the TUI calls it)."""
    command = [PY, script("plain_loop.py"), "--workers", "0", "--epochs", "1000"]
    found = check_command(command)
    settings = RunSettings.make(command=tuple(command), script=found["script"], name=found["name"])
    plan = Plan(settings, [Variant("eager", SCRIPT)], "sequential", cache_dir=inductor_cache,
                interval=None)
    live = ScriptLive(tmp_path, plan)
    run = "eager-script"
    live.wait_steps(run, 20)
    live.sup.pause(run)
    live.wait_state(run, "paused")
    before = len(live.of(run, events.STEP))
    time.sleep(1.0)
    assert len(live.of(run, events.STEP)) == before  # the hook waits at the step boundary
    live.sup.resume(run)
    live.wait_steps(run, before + 20)
    new = live.sup.restart(run, Variant("default", SCRIPT))  # m: the next mode, a new process
    live.wait_steps(new, 10)
    assert live.sup.states()[run] == "stopped"
    assert "cleanup done" in (live.store.path / "logs" / f"{run}.log").read_text()
    assert live.close() == "done"
    steps = live.of(run, events.STEP)
    assert [s["i"] for s in steps] == list(range(len(steps)))
    assert max(s["ms"] for s in steps[2:]) < 500  # the pause fell between two steps
    assert live.of(run, events.FINISHED)[0]["paused_s"] >= 1.0
    assert live.of(new, events.FINISHED)[0]["reason"] == "stopped"


def test_loss_parity_says_when_the_runs_did_not_start_alike(tuimon):
    """tuimon seeds torch before the script (--seed, default 0): gan.py, which seeds nothing, is
    then comparable; clock_seeded.py reseeds from the clock, and the summary says so."""
    for name, comparable in (("gan.py", True), ("clock_seeded.py", False)):
        proc, session = tuimon("run", "--headless", "--modes", "eager,default",
                               "--no-auto-compile", "--steps", "20", "--", PY, script(name))
        assert proc.returncode == 0, proc.stderr
        md = (session / "summary.md").read_text()
        assert ("not comparable with eager/script: the first losses differ" in md) != comparable
        assert ("max Δ" in md) == comparable


def test_a_capture_on_a_script_timed_by_backward(tuimon):
    """No torch.optim optimizer: steps come from backward(), and a profiler capture still opens
    there (the profiler is made when training starts, not at the first optimizer step)."""
    proc, session = tuimon("run", "--headless", "--modes", "eager", "--steps", "30", "--profile-at",
                           "10", "--", PY, script("custom_optimizer.py"))
    assert proc.returncode == 0, proc.stderr
    kinds = runs_of(session)[1]["eager-script"]
    done = [p for p in kinds["profile"] if p.get("state") == "done"]
    assert done and done[0]["top_ops"], kinds["profile"]
