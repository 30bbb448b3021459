"""Crash containment and clean shutdown (issue 7), in real sessions.

One variant aborts, segfaults, runs out of host memory (an address-space limit) or of CUDA
memory (raised by hand: no GPU needed), or hangs; the report says which, with the tail of its
output, and its sibling still runs to the end. Ctrl-C, while stepping, building or compiling,
leaves no descendant process of tuimon behind (psutil).
"""

from __future__ import annotations

import contextlib
import json
import signal
import subprocess
import sys
import time

import psutil
import pytest
from conftest import RECIPES, TEST_RECIPES
from test_end_to_end import runs_of

from tuimon.sessiondir import store

FAIL = str(TEST_RECIPES / "fail_how.py")
SLOW = str(TEST_RECIPES / "slow_steps.py")
# fail_how.py fails in fp32 (the first variant): the amp sibling runs after the failure. It counts
# its steps in a closure, which the FLOP count's extra step would advance by one (measuring.md):
# --no-flops keeps "fails at step N" at step N.
TWO = ("--modes", "eager", "--precision", "fp32,amp", "--device", "cpu", "--steps", "10",
       "--no-probes", "--no-flops")


def one_fails(tuimon, how: str) -> tuple[dict, str, str]:
    """A session where eager/fp32 fails ``how`` and eager/amp completes: (failed event,
    summary.md, stdout)."""
    proc, session = tuimon(FAIL, "--headless", *TWO, "--set", f"how={how}")
    assert proc.returncode == 1, proc.stderr
    _, runs = runs_of(session)
    assert [s["i"] for s in runs["eager-amp"]["step"]] == list(range(10))
    assert runs["eager-amp"]["finished"][0]["reason"] == "steps"
    (failed,) = runs["eager-fp32"]["failed"]
    assert "finished" not in runs["eager-fp32"]
    assert json.loads((session / "summary.json").read_text())["meta"]["status"] == "failed"
    return failed, (session / "summary.md").read_text(), proc.stdout


@pytest.mark.parametrize("how, what", [
    ("abort", "aborted (SIGABRT): abort() in native code, e.g. a failed C++ assertion"),
    ("segv", "segmentation fault (SIGSEGV)"),
])
def test_a_native_crash_is_named_with_its_python_stack(tuimon, how, what):
    failed, md, stdout = one_fails(tuimon, how)
    assert failed["stage"] == "crash" and failed["kind"] == "signal"
    assert failed["signal"] == ("SIGABRT" if how == "abort" else "SIGSEGV")
    assert failed["what"].startswith(what) and "Python stacks in the log tail" in failed["what"]
    # faulthandler's report is in the tail: its first line and the recipe's frame.
    assert "Fatal Python error" in failed["traceback"]
    assert "fail_how.py" in failed["traceback"] and "Extension modules" not in failed["traceback"]
    assert f"| failed: {what}" in md and "Fatal Python error" in md
    assert f"eager/fp32: FAILED (crash): {what}" in stdout and "fail_how.py" in stdout


@pytest.mark.parametrize("how", ["rlimit", "memoryerror"])
def test_host_out_of_memory_says_how_much_and_what_to_try(tuimon, how):
    # The recipe caps its address space (RLIMIT_AS) 256 MiB above its size, then asks for 8 GiB:
    # torch's CPU allocator raises a RuntimeError, Python's a MemoryError.
    failed, md, stdout = one_fails(tuimon, how)
    assert failed["stage"] == "step" and failed["kind"] == "oom-host"
    assert failed["where"].startswith("fail_how.py:")
    assert "try a smaller --batch-size" in failed["what"]
    if how == "rlimit":
        assert failed["error"] == "RuntimeError" and failed["tried_bytes"] == 2**33
        assert failed["what"].startswith("out of host memory (RuntimeError from torch's CPU "
                                         "allocator): tried to allocate 8.0 GiB")
    else:
        assert failed["error"] == "MemoryError" and "tried_bytes" not in failed
        assert failed["what"].startswith("out of host memory (MemoryError)")
    assert "| failed: out of host memory" in md and "eager/fp32 (oom-host): failed after 3" in md


def test_cuda_out_of_memory_is_told_apart(tuimon):
    failed, md, stdout = one_fails(tuimon, "cuda_oom")
    assert failed["kind"] == "oom-cuda" and failed["error"] == "OutOfMemoryError"
    assert failed["what"] == ("out of GPU memory (CUDA OOM): tried to allocate 2.00 GiB — "
                              "try a smaller --batch-size")
    assert "cuda_max_allocated" not in failed  # CUDA never initialised in this run
    assert "| failed: out of GPU memory (CUDA OOM)" in md
    assert "FAILED (step at fail_how.py:" in stdout


def descendants(pid: int, seen: dict[int, float]) -> None:
    """Add every descendant of ``pid`` alive now to ``seen`` (pid -> create time)."""
    try:
        for p in psutil.Process(pid).children(recursive=True):
            with contextlib.suppress(psutil.Error):  # it exited meanwhile
                seen[p.pid] = p.create_time()
    except psutil.NoSuchProcess:
        pass


def survivors(seen: dict[int, float]) -> list[str]:
    """Those still running (the same process: same create time; zombies are dead)."""
    left = []
    for pid, created in seen.items():
        try:
            p = psutil.Process(pid)
            if p.create_time() == created and p.status() != psutil.STATUS_ZOMBIE:
                left.append(f"{pid} {' '.join(p.cmdline())[:120]}")
        except psutil.NoSuchProcess:
            pass
    return left


def interrupt_when(tmp_path, args: list[str], ready, timeout: float = 60, sig=signal.SIGINT):
    """Start ``tuimon ARGS --headless``, watch its descendants until ``ready(events,
    descendants)``, then Ctrl-C it (SIGINT, or ``sig``). Returns (exit code, stdout, session,
    descendants seen)."""
    out = tmp_path / "sessions"
    ours = list(args[:args.index("--")]) if "--" in args else list(args)
    theirs = list(args[len(ours):])
    cmd = [sys.executable, "-m", "tuimon", *ours, "--repeats", "1", "--headless", "--out", str(out), *theirs]
    # SIGINT as a terminal gives it (a background shell job would hand it down ignored).
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            cwd=tmp_path, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    seen: dict[int, float] = {}
    session = None
    try:
        deadline = time.monotonic() + timeout
        while True:
            assert time.monotonic() < deadline and proc.poll() is None, "never got ready"
            descendants(proc.pid, seen)
            found = sorted(out.glob("*/events.jsonl")) if out.exists() else []
            if found:
                session = found[0].parent
                if ready(store.read_events(session)[0], seen):
                    break
            time.sleep(0.05)
        proc.send_signal(sig)
        stdout, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    return proc.returncode, stdout, session, seen


def of_type(evs: list[dict], kind: str, run: str | None = None) -> list[dict]:
    return [e for e in evs if e["type"] == kind and (run is None or e.get("run") == run)]


def test_a_hung_run_is_flagged_its_sibling_completes_and_the_summary_says_hung(tmp_path):
    # In parallel, eager/fp32 sleeps for an hour after 3 fast steps (sent late: steps go out 4
    # times a second, so the supervisor has none yet) while eager/amp runs to its end.
    def ready(evs, _):
        return (of_type(evs, "warning", "eager-fp32") and of_type(evs, "finished", "eager-amp"))

    rc, stdout, session, seen = interrupt_when(
        tmp_path, [FAIL, *TWO, "--set", "how=hang", "--schedule", "parallel", "--hang-timeout", "1"],
        ready)
    assert rc == 130, stdout
    evs, runs = runs_of(session)
    (hung,) = runs["eager-fp32"]["warning"]
    assert hung["hung"] and hung["text"].startswith("no step for 1 s: hung?")
    assert [s["i"] for s in runs["eager-amp"]["step"]] == list(range(10))
    # Stopped at Ctrl-C: the stop line is not read inside the sleep, SIGINT ends it.
    assert runs["eager-fp32"]["finished"][0]["reason"] == "stopped"
    assert [s["i"] for s in runs["eager-fp32"]["step"]] == [0, 1, 2]
    summary = json.loads((session / "summary.json").read_text())
    r = next(r for r in summary["runs"] if r["run"] == "eager-fp32")
    assert r["status"] == "stopped" and r["failure"]["hung_s"] >= 1
    md = (session / "summary.md").read_text()
    assert "| stopped while hung (no step for " in md
    assert "eager/fp32: stopped while hung" in stdout
    assert not survivors(seen)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_ctrl_c_while_stepping_leaves_no_process_and_keeps_the_measurements(tmp_path, sig):
    # SIGTERM (`kill PID`) is taken as Ctrl-C: by default it would orphan the runners.
    def ready(evs, seen):
        return len(of_type(evs, "step")) >= 20 and len(seen) >= 2  # tuimon's runners

    rc, stdout, session, seen = interrupt_when(
        tmp_path, [SLOW, "--modes", "eager", "--precision", "fp32,amp", "--schedule", "parallel",
                   "--steps", "100000", "--set", "sleep_ms=20", "--interval", "0.2"], ready, sig=sig)
    assert rc == 130, stdout
    assert not survivors(seen)
    evs, runs = runs_of(session)
    assert {e["pid"] for e in of_type(evs, "run_started")} <= set(seen)
    for run in ("eager-fp32", "eager-amp"):
        assert runs[run]["finished"][0]["reason"] == "stopped"
    assert store.read_meta(session)["status"] == "interrupted"
    assert "| status | stopped | stopped |" in (session / "summary.md").read_text()
    assert "summary:" in stdout


def test_ctrl_c_while_building_kills_the_runner_at_once(tmp_path):
    def ready(evs, seen):
        return of_type(evs, "phase") and seen  # the runner exists, and is building

    started = time.monotonic()
    rc, stdout, session, seen = interrupt_when(
        tmp_path, [SLOW, "--modes", "eager", "--steps", "10", "--set", "build_s=60"], ready)
    assert rc == 130, stdout
    assert time.monotonic() - started < 30  # not the 60 s build
    assert not survivors(seen)
    evs, runs = runs_of(session)
    assert "run_started" not in runs["eager-fp32"]
    (finished,) = runs["eager-fp32"]["finished"]
    assert finished["reason"] == "stopped" and finished["forced"] == "killed by SIGKILL"
    assert store.read_meta(session)["status"] == "interrupted"
    assert (session / "summary.md").is_file()


def test_ctrl_c_during_a_cold_compile_leaves_no_compiler_process(tmp_path):
    # A fresh Inductor cache (no --cache-dir): the first step compiles cold, running g++ and a
    # helper interpreter under the runner. Interrupted once those exist.
    def ready(evs, seen):
        return of_type(evs, "compile_phase") and len(seen) >= 2  # the runner and a compiler

    rc, stdout, session, seen = interrupt_when(
        tmp_path, [str(RECIPES / "tiny_mlp.py"), "--modes", "default", "--steps", "100000",
                   "--no-probes"], ready)
    assert rc == 130, stdout
    assert not survivors(seen)
    _, runs = runs_of(session)
    assert runs["default-fp32"]["finished"][0]["reason"] == "stopped"
    assert store.read_meta(session)["status"] == "interrupted"


def wait_until_gone(seen: dict[int, float], timeout: float) -> list[str]:
    deadline = time.monotonic() + timeout
    while (left := survivors(seen)) and time.monotonic() < deadline:
        time.sleep(0.2)
    return left


def test_a_runner_stuck_in_a_step_does_not_outlive_a_killed_supervisor(tmp_path):
    # A step of ten minutes: the runner never reaches a step boundary to read its control pipe's
    # EOF; its parent watch notices the supervisor is gone and stops it.
    def ready(evs, seen):
        return of_type(evs, "phase") and of_type(evs, "phase")[-1].get("phase") == "warmup" and seen

    rc, _, session, seen = interrupt_when(
        tmp_path, [SLOW, "--modes", "eager", "--steps", "5", "--set", "sleep_ms=600000", "--no-probes"],
        ready, sig=signal.SIGKILL)
    assert rc == -signal.SIGKILL
    assert not wait_until_gone(seen, 15)
    log = (session / "logs" / "eager-fp32.log").read_text()
    assert "the supervisor (pid" in log and "is gone; stopping" in log


def test_the_parent_watch_kills_a_runner_deaf_to_sigint(tmp_path):
    # Stuck in native code that never returns to Python: SIGINT does nothing, the grace kill does.
    script = tmp_path / "deaf.py"
    script.write_text(
        "import signal, time\n"
        "from tuimon.runner.orphan import watch_parent\n"
        "signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})\n"
        "watch_parent(grace_s=0.5, period_s=0.1)\n"
        "print('ready', flush=True)\n"
        "time.sleep(600)\n")
    parent = subprocess.Popen(  # a stand-in supervisor: starts the runner in its own group
        [sys.executable, "-c", "import subprocess, sys, time\n"
         f"subprocess.Popen([sys.executable, {str(script)!r}], start_new_session=True)\n"
         "time.sleep(600)"], stdout=subprocess.PIPE, text=True)
    try:
        assert parent.stdout.readline().strip() == "ready"
        seen: dict[int, float] = {}
        descendants(parent.pid, seen)
        assert len(seen) == 1
    finally:
        parent.kill()
        parent.wait()
    assert not wait_until_gone(seen, 5)


ABORT_AT_TEARDOWN = """
import os
import torch


class AbortAtTeardown:  # a module global: its __del__ runs after every atexit handler
    def __del__(self):
        os.abort()


bomb = AbortAtTeardown()
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(1000):
    opt.zero_grad()
    model(torch.randn(8, 4)).sum().backward()
    opt.step()
"""


def test_a_script_killed_as_it_exits_after_its_steps_keeps_them_and_says_so(tuimon, tmp_path):
    script = tmp_path / "train.py"
    script.write_text(ABORT_AT_TEARDOWN)
    proc, session = tuimon("run", "--headless", "--modes", "eager", "--steps", "12", "--", sys.executable,
                           str(script))
    assert proc.returncode == 0, proc.stderr
    kinds = runs_of(session)[1]["eager-script"]
    assert kinds["finished"][0]["reason"] == "steps" and len(kinds["step"]) == 12
    assert kinds["run_exited"][0]["returncode"] == -signal.SIGABRT
    (warning,) = [w["text"] for w in kinds["warning"] if "as it exited" in w["text"]]
    assert warning.startswith("its process was killed by SIGABRT as it exited, after it had finished")
    assert "killed by SIGABRT as it exited" in proc.stdout
