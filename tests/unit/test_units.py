"""Unit tests of the pure pieces: events, variants, recipe checks, clocks, store."""

from __future__ import annotations

import json

import pytest

from tuimon import events
from tuimon.recipe import RecipeError, check_recipe_file, resolve_defaults
from tuimon.runner.timing import CpuClock, CudaClock
from tuimon.sessiondir import store
from tuimon.variants import MODES, parse_list, product


def test_event_round_trip_and_non_finite_loss():
    e = events.make(events.STEP, "eager-fp32", i=3, ms=1.5, loss=float("nan"))
    line = events.encode(e)
    assert line.endswith("\n") and "NaN" not in line
    back = events.decode(line)
    assert back["loss"] is None and back["i"] == 3 and back["run"] == "eager-fp32"


@pytest.mark.parametrize("line", ["", "   ", '{"type": "step", "i"', "[1, 2]", '{"no_type": 1}'])
def test_decode_rejects_torn_or_foreign_lines(line):
    assert events.decode(line) is None


def test_variants_parse_and_order():
    assert parse_list(" eager, default ,eager", MODES, "mode") == ["eager", "default"]
    with pytest.raises(ValueError, match="unknown mode 'fast'"):
        parse_list("fast", MODES, "mode")
    vs = product(["eager", "default"], ["fp32", "amp"])
    assert [v.label for v in vs] == ["eager/fp32", "default/fp32", "eager/amp", "default/amp"]
    assert vs[1].run_id == "default-fp32" and vs[1].compiled and not vs[0].compiled


def test_recipe_file_checks(tmp_path):
    good = tmp_path / "good.py"
    good.write_text("import torch\ndef build(cfg):\n    return None\n")
    assert check_recipe_file(good) == good.resolve()
    assigned = tmp_path / "assigned.py"
    assigned.write_text("def _b(cfg):\n    pass\nbuild = _b\n")
    assert check_recipe_file(assigned)
    nested = tmp_path / "nested.py"
    nested.write_text("class A:\n    def build(self, cfg):\n        pass\n")
    with pytest.raises(RecipeError, match="does not define build"):
        check_recipe_file(nested)


def test_defaults_merge_per_device():
    d = resolve_defaults({"cpu": {"batch_size": 4}, "cuda": {"batch_size": 128}}, "cuda:1")
    assert d["batch_size"] == 128 and d["steps"] > 0 and d["image_size"] == 224
    assert resolve_defaults(None, "cpu")["batch_size"] == 16


def test_cpu_clock_measures_each_step():
    clock = CpuClock()
    for _ in range(3):
        clock.start()
        clock.stop()
    times = clock.ready()
    assert len(times) == 3 and all(t >= 0 for t in times)
    assert clock.ready() == []


class FakeEvent:
    """Mimics torch.cuda.Event: a 'GPU' that completes events only when told to."""

    gpu_time = 0.0
    completed_upto = -1
    recorded: list = []
    syncs = 0

    def __init__(self, enable_timing=False):
        assert enable_timing
        self.seq = None

    def record(self):
        self.seq = len(FakeEvent.recorded)
        FakeEvent.recorded.append(self)
        FakeEvent.gpu_time += 2.5  # every event lands 2.5 ms after the one before
        self.at = FakeEvent.gpu_time

    def query(self):
        return self.seq <= FakeEvent.completed_upto

    def synchronize(self):
        FakeEvent.syncs += 1
        FakeEvent.completed_upto = max(FakeEvent.completed_upto, self.seq)

    def elapsed_time(self, end):
        assert self.query() and end.query(), "elapsed_time on an unfinished event syncs"
        return end.at - self.at


class FakeCuda:
    Event = FakeEvent


def test_cuda_clock_never_syncs_per_step_and_reads_lazily():
    FakeEvent.recorded, FakeEvent.completed_upto, FakeEvent.syncs = [], -1, 0
    clock = CudaClock(FakeCuda)
    for _ in range(4):
        clock.start()
        clock.stop()
    assert clock.ready() == []  # the GPU has finished nothing yet: nothing read, no wait
    FakeEvent.completed_upto = 3  # the first two steps' events are done
    assert clock.ready() == [2.5, 2.5]
    assert FakeEvent.syncs == 0
    assert clock.drain() == [2.5, 2.5]  # end of run: one wait on the last event
    assert FakeEvent.syncs == 1


def test_cuda_clock_bounds_pending_steps():
    FakeEvent.recorded, FakeEvent.completed_upto, FakeEvent.syncs = [], -1, 0
    clock = CudaClock(FakeCuda, max_pending=8)
    for _ in range(20):
        clock.start()
        clock.stop()
    assert FakeEvent.syncs > 0 and len(clock._pairs) <= 8
    assert len(clock.drain()) == 20  # nothing measured is dropped


def test_store_tolerates_torn_last_line(tmp_path):
    s = store.SessionStore.create(tmp_path, "x")
    s.append([events.make(events.STEP, "r", i=0, ms=1.0), events.make(events.STEP, "r", i=1, ms=2.0)])
    s.close()
    with open(s.path / store.EVENTS, "a") as f:
        f.write('{"type": "step", "run": "r", "i": 2, "m')  # power cut mid-line
    evs, bad = store.read_events(s.path)
    assert [e["i"] for e in evs] == [0, 1] and bad == 1
    assert oct(s.path.stat().st_mode & 0o777) == "0o700"


def test_store_names_do_not_collide(tmp_path):
    a = store.SessionStore.create(tmp_path, "same")
    b = store.SessionStore.create(tmp_path, "same")
    assert a.path != b.path
    store.write_json_atomic(a.path / "meta.json", {"k": 1})
    assert json.loads((a.path / "meta.json").read_text()) == {"k": 1}


@pytest.mark.parametrize("count, device, expected", [
    (1, "cuda:0", None),
    (2, "cuda:1", None),
    (1, "cuda:1", "--device cuda:1 asked for, but there is 1 CUDA device here (cuda:0)"),
    (2, "cuda:99", "--device cuda:99 asked for, but there are 2 CUDA devices here (cuda:0 to cuda:1)"),
])
def test_runner_refuses_a_cuda_index_beyond_the_devices(count, device, expected):
    import types

    from tuimon.runner.__main__ import SetupError, resolve_device

    fake = types.SimpleNamespace(cuda=types.SimpleNamespace(is_available=lambda: True,
                                                            device_count=lambda: count))
    if expected is None:
        assert resolve_device(fake, device) == device
    else:
        with pytest.raises(SetupError) as err:
            resolve_device(fake, device)
        assert str(err.value) == expected


def test_failure_words_for_signals_exits_and_allocator_errors():
    from tuimon import failures

    killed = failures.of_exit(-9)
    assert killed == {"kind": "signal", "signal": "SIGKILL", "what": failures.SIGNALS["SIGKILL"]}
    assert "OOM killer" in killed["what"] and "dmesg" in killed["what"]
    assert failures.of_exit(-6, "x\nFatal Python error: Aborted")["what"].endswith(
        "; Python stacks in the log tail")
    assert failures.of_exit(-10)["what"] == "killed by SIGUSR1 (User defined signal 1)"
    assert failures.of_exit(3)["kind"] == "exit"
    oom = failures.of_exception(RuntimeError("CUDA error: out of memory"),
                                {"cuda_max_allocated": 3 * 2**30, "cuda_max_reserved": 4 * 2**30,
                                 "cuda_total": 80 * 2**30})
    assert oom["what"] == ("out of GPU memory (CUDA OOM); peak 3.0 GiB allocated, 4.0 GiB reserved "
                           "of 80.0 GiB — try a smaller --batch-size")
    plain = failures.of_exception(RuntimeError("you tried to allocate 5 bytes"))  # not the allocator
    assert plain == {"kind": "exception", "what": "RuntimeError: you tried to allocate 5 bytes"}
    tail = "out\nFatal Python error: Aborted\n\nThread 0x1 (most recent call first):\n  File \"t.py\", " \
           "line 1 in w\n\nCurrent thread 0x2 (most recent call first):\n  File \"a.py\", line 3 in f\n" \
           "  File \"b.py\", line 9 in g"
    assert failures.clue(tail) == ["Fatal Python error: Aborted", 'File "a.py", line 3 in f',
                                   'File "b.py", line 9 in g']
