"""The fork server's decisions, without a process: what may be forked, and the exit codes."""

from __future__ import annotations

import os
import signal
import threading

from tuimon.control import forkserver
from tuimon.control.forkserver import Forked, ForkServer, comparable, enabled
from tuimon.runner.forkserver import exit_code


def idle(env: dict) -> ForkServer:
    """A ForkServer's state, ready, with no process behind it."""
    server = ForkServer.__new__(ForkServer)
    server._base, server.ready_s = comparable(env), 2.5
    server._dead = server._closed = False
    server._proc = object()
    server._cond, server._exits = threading.Condition(), {}
    return server


BASE = {"PATH": "/usr/bin", "PYTHONUNBUFFERED": "1", "HOME": "/root"}


def test_only_what_torch_reads_when_it_compiles_may_differ():
    server = idle(BASE)
    own = {**BASE, "TORCHINDUCTOR_CACHE_DIR": "/s/cache/r2", "TRITON_CACHE_DIR": "/s/cache/r2/t",
           "TUIMON_SETTINGS": "{}", "TUIMON_SUPERVISOR_PID": "42", "TUIMON_ARTIFACTS": "{}"}
    assert server.takes(own)
    # Read at import or at process start: torch's logs and trace, malloc's tunables, hashing.
    for name, value in (("TORCH_LOGS", "+dynamo"), ("TORCH_TRACE", "/s/trace"),
                        ("MALLOC_MMAP_THRESHOLD_", "1"), ("PYTHONHASHSEED", "0"),
                        ("TORCHINDUCTOR_FX_GRAPH_CACHE", "0"), ("OMP_NUM_THREADS", "1")):
        assert not server.takes({**own, name: value}), name
    assert not server.takes({k: v for k, v in own.items() if k != "HOME"})


def test_not_ready_dead_or_closed_takes_nothing():
    server = idle(BASE)
    server.ready_s = None
    assert not server.takes(BASE)  # still importing: the run is spawned, as before
    for flag in ("_dead", "_closed"):
        server = idle(BASE)
        setattr(server, flag, True)
        assert not server.takes(BASE), flag


def test_exit_codes_read_as_popen_gives_them():
    assert exit_code(7 << 8) == 7 and exit_code(0) == 0
    assert exit_code(signal.SIGSEGV) == -signal.SIGSEGV
    assert exit_code(signal.SIGKILL | 0x80) == -signal.SIGKILL  # a core dumped


def test_a_forked_runner_waits_for_its_code_once():
    server = idle(BASE)
    run = Forked(server, 1234)

    def told():  # as the reader thread hears it
        with server._cond:
            server._exits[1234] = -9
            server._cond.notify_all()

    threading.Timer(0.05, told).start()
    assert run.wait() == -9 and run.wait() == -9 and 1234 not in server._exits


def test_a_fork_server_gone_before_telling_gives_the_run_up_once_it_is_gone():
    server = idle(BASE)
    server._dead = True
    assert Forked(server, 2**22 + 12345).wait() == 1  # no such process: gone already


def test_the_switch_and_what_runs_without_it(tmp_path):
    assert not enabled({}) and not enabled({"TUIMON_FORKSERVER": "0"})  # opt-in for now
    assert enabled({"TUIMON_FORKSERVER": "1"})

    class Plan:
        env: dict = {}
        torch_trace = False

        class program:
            is_script = True

    os.environ["TUIMON_FORKSERVER"] = "1"
    try:
        assert forkserver.for_plan(Plan, tmp_path / "f.log", jobs=False) is None  # a script
        Plan.program.is_script = False
        assert forkserver.for_plan(Plan, tmp_path / "f.log", jobs=True) is None  # torchrun's ranks
        Plan.torch_trace = True
        assert forkserver.for_plan(Plan, tmp_path / "f.log", jobs=False) is None  # TORCH_TRACE
        Plan.torch_trace = False
        assert forkserver.for_plan(Plan, tmp_path / "f.log", jobs=False) is not None
    finally:
        del os.environ["TUIMON_FORKSERVER"]
    assert forkserver.for_plan(Plan, tmp_path / "f.log", jobs=False) is None  # off by default
