"""Memory per phase, child side (runner/memory_phases.py), against a fake CUDA allocator: the
peaks of forward, backward and the optimizer step read at the trainer's marks, no sync, the reads
under the sync guard's watch, a step that compiled measured again, the CUDA-graph pool."""

from __future__ import annotations

import types

import pytest

from tuimon.runner import memory_phases
from tuimon.runner.memory_phases import NEVER, PhaseMemory, graph_pool
from tuimon.runner.syncdebug import SyncGuard

MiB = 2**20


class FakeAllocator:
    """torch.cuda's allocator counters as the caching allocator keeps them (host-side), the sync
    debug mode, and a synchronize that counts (nothing here may call it)."""

    def __init__(self, total: int = 1024 * MiB) -> None:
        self.current = self.peak = self.reserved = 0
        self.total = total
        self.syncs = 0
        self.mode = 0
        self.read_modes: list[int] = []

    def alloc(self, n: int) -> None:
        self.current += n
        self.peak = max(self.peak, self.current)
        self.reserved = max(self.reserved, self.current)

    def free(self, n: int) -> None:
        self.current -= n

    def memory_stats_as_nested_dict(self, index: int) -> dict:
        self.read_modes.append(self.mode)
        return {"allocated_bytes": {"all": {"peak": self.peak, "current": self.current}},
                "reserved_bytes": {"all": {"current": self.reserved, "peak": self.reserved}}}

    def reset_peak_memory_stats(self, index: int) -> None:
        self.peak = self.current

    def mem_get_info(self, index: int) -> tuple[int, int]:
        return self.total - self.reserved - 100 * MiB, self.total  # 100 MiB: the CUDA context

    def synchronize(self) -> None:
        self.syncs += 1

    def get_sync_debug_mode(self) -> int:
        return self.mode

    def set_sync_debug_mode(self, mode: int) -> None:
        self.mode = mode


class FakeTrainer:
    """A step as the recipe trainer marks it: forward keeps activations (batch-sized), backward
    frees them and leaves gradients, the optimizer's temporaries come and go with zero_grad."""

    def __init__(self, cuda: FakeAllocator, act: int = 200 * MiB, grads: int = 50 * MiB,
                 opt_tmp: int = 30 * MiB) -> None:
        self.cuda, self.act, self.grads, self.opt_tmp = cuda, act, grads, opt_tmp
        self.mark = lambda: 0.0

    def step(self, batch):
        c = self.cuda
        c.alloc(self.act)  # forward: activations saved for backward
        self.mark()
        c.alloc(self.grads)
        c.alloc(self.act // 2)  # backward's temporaries at its peak
        c.free(self.act // 2)
        c.free(self.act)
        self.mark()
        c.alloc(self.opt_tmp)
        c.free(self.opt_tmp)
        c.free(self.grads)  # zero_grad(set_to_none=True)
        self.mark()
        return 1.0


def measured_step(trainer, mem, batch, guard=None):
    """A recipe's measured step as the step engine runs it (memory_phases.MemoryStep): the
    allocator read as it begins, at its boundary (tuimon's work), and at each of the trainer's
    marks, through ``PhaseMemory.marker``."""
    guard = guard or SyncGuard(None, None)
    guard.ours()
    mem.begin()
    guard.theirs()
    mark = trainer.mark
    trainer.mark = mem.marker(mark, guard)
    try:
        return trainer.step(batch)
    finally:
        trainer.mark = mark


def test_each_phase_has_its_peak_read_without_a_sync():
    cuda = FakeAllocator()
    cuda.alloc(300 * MiB)  # weights and optimizer state
    mem = PhaseMemory(cuda, 0, first=3, count=2)
    trainer = FakeTrainer(cuda)
    assert mem.at == 3
    measured_step(trainer, mem, None)
    assert mem.end(3, compiled=False) is not None and mem.at == 4  # said after each step
    measured_step(trainer, mem, None)
    found = mem.end(4, compiled=False)
    assert mem.at == NEVER and cuda.syncs == 0
    assert found["steps"] == [3, 4] and found["base"] == 300 * MiB
    assert found["phases"] == {"forward": {"peak": 500 * MiB, "end": 500 * MiB},
                               "backward": {"peak": 650 * MiB, "end": 350 * MiB},
                               "optimizer": {"peak": 380 * MiB, "end": 300 * MiB}}
    assert found["total"] == 1024 * MiB
    assert found["budget"] == 1024 * MiB - 100 * MiB  # reserved + the device's free
    assert trainer.mark() == 0.0  # the trainer's own marks again
    # The flush window's peaks survive the resets: said in a memory event after the step.
    assert mem.window() == {"cuda_peak_allocated": 650 * MiB, "cuda_peak_reserved": 650 * MiB}


def test_the_window_keeps_a_peak_from_before_the_measured_step():
    cuda = FakeAllocator()
    cuda.alloc(900 * MiB)  # step 0's compile, in the same flush window
    cuda.free(900 * MiB)
    mem = PhaseMemory(cuda, 0)
    measured_step(FakeTrainer(cuda), mem, None)
    assert mem.window()["cuda_peak_allocated"] == 900 * MiB  # not the step's 350 MiB


def test_a_step_that_compiled_is_measured_again_on_the_next():
    cuda = FakeAllocator()
    mem = PhaseMemory(cuda, 0, first=3, count=1)
    trainer = FakeTrainer(cuda)
    measured_step(trainer, mem, None)
    assert mem.end(3, compiled=True) is None and mem.at == 4
    measured_step(FakeTrainer(cuda, act=10 * MiB), mem, None)
    found = mem.end(4, compiled=False)
    assert found["steps"] == [4] and found["phases"]["forward"]["peak"] == 10 * MiB  # not step 3's


def test_the_reads_are_tuimons_work_under_the_sync_guard():
    cuda = FakeAllocator()
    guard = SyncGuard(cuda, "error")
    guard.theirs()  # inside the recipe's step: the mode the recipe runs under (0)
    mem = PhaseMemory(cuda, 0)
    measured_step(FakeTrainer(cuda), mem, None, guard)
    assert cuda.read_modes == [2, 2, 2, 2]  # begin and the three marks: checked for syncs
    assert cuda.mode == 0  # back to the recipe's mode


def test_a_scripts_timeline_marks_close_their_parts():
    cuda = FakeAllocator()
    mem = PhaseMemory(cuda, 0, first=0, count=1)
    marks = []
    mark = mem.marker(lambda part: marks.append(part))
    mem.begin()
    cuda.alloc(8 * MiB)  # data: the batch
    mark(0)
    cuda.alloc(40 * MiB)
    mark(1)  # forward
    cuda.alloc(5 * MiB)
    mark(5)  # other (a loss.item(), a print)
    found = mem.end(0, compiled=False)
    assert marks == [0, 1, 5]
    assert {k: v["peak"] for k, v in found["phases"].items()} == {
        "data": 8 * MiB, "forward": 48 * MiB, "other": 53 * MiB}


def test_the_graph_pool_is_read_from_the_cudagraph_trees(monkeypatch):
    segments = [{"segment_pool_id": (0, 1), "total_size": 64 * MiB, "allocated_size": 40 * MiB},
                {"segment_pool_id": (0, 0), "total_size": 512 * MiB, "allocated_size": 500 * MiB}]
    asked = []

    def snapshot(*args, **kwargs):
        asked.append((args, kwargs))
        return segments

    torch = types.SimpleNamespace(cuda=types.SimpleNamespace(memory_snapshot=snapshot))
    manager = types.SimpleNamespace(cuda_graphs_thread_pool=(0, 1))
    trees = types.SimpleNamespace(get_manager=lambda i, create_if_none_exists: manager)
    monkeypatch.setitem(memory_phases.sys.modules, "torch", torch)
    monkeypatch.setitem(memory_phases.sys.modules, "torch._inductor.cudagraph_trees", trees)
    assert graph_pool(0) == {"graph_pool": 64 * MiB, "graph_pool_used": 40 * MiB}
    assert asked == [(((0, 1),), {"include_traces": False})]

    trees.get_manager = lambda i, create_if_none_exists: None  # no CUDA graphs on this device
    assert graph_pool(0) == {"graph_pool": 0}

    def broken(i, create_if_none_exists):
        raise AttributeError("no attribute 'cuda_graphs_thread_pool'")

    trees.get_manager = broken  # torch's internals moved: cannot tell, said, never raised
    found = graph_pool(0)
    assert found["graph_pool"] is None and "AttributeError" in found["graph_pool_unread"]

    trees.get_manager = lambda i, create_if_none_exists: manager
    segments[:] = [{"total_size": 64 * MiB}]  # a snapshot that names no pool: not "none"
    assert graph_pool(0)["graph_pool_unread"].startswith("KeyError")

    def old_torch(*args, **kwargs):  # torch before 2.6: no arguments
        if args or kwargs:
            raise TypeError("memory_snapshot() takes 0 positional arguments")
        return [{"segment_pool_id": (0, 1), "total_size": 8 * MiB, "allocated_size": 0}]

    torch.cuda.memory_snapshot = old_torch
    assert graph_pool(0) == {"graph_pool": 8 * MiB, "graph_pool_used": 0}


def test_no_cudagraph_trees_imported_means_no_pool(monkeypatch):
    monkeypatch.setitem(memory_phases.sys.modules, "torch", types.SimpleNamespace())
    monkeypatch.delitem(memory_phases.sys.modules, "torch._inductor.cudagraph_trees", raising=False)
    assert graph_pool(0) == {"graph_pool": 0}


@pytest.mark.parametrize("first", [0, 3])
def test_the_room_is_left_out_where_torch_does_not_say(first):
    cuda = FakeAllocator()
    cuda.mem_get_info = None  # an old torch, a broken context
    mem = PhaseMemory(cuda, 0, first=first, count=1)
    measured_step(FakeTrainer(cuda), mem, None)
    found = mem.end(first, compiled=False)
    assert "budget" not in found and "total" not in found and found["phases"]
