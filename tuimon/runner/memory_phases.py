"""Memory per phase on CUDA: the caching allocator's peak in forward, backward and the optimizer
step, read at the phase boundaries tuimon already marks (the trainer's marks; a script's
Timeline), on a few steps kept out of the steady state (their steps say ``mem: 1``).

Read without a sync: ``torch.cuda.memory_stats_as_nested_dict`` and
``torch.cuda.reset_peak_memory_stats`` take the allocator's mutex and copy or reset host-side
counters (c10/cuda/CUDACachingAllocator.cpp: ``getStats``, ``resetPeakStats``); no CUDA call,
so nothing waits for the device. The allocator counts an allocation when the host asks for it
(stream-ordered), so a phase's peak is right however far behind the GPU runs. Still, each read
builds a dict of the allocator's ~150 counters (tens of µs): not every step, ``COUNT`` steps
from ``FIRST`` on, marked so the statistics leave them out of the step times.

At the first memory step's end, once: the memory this process could hold (the allocator's
reserved bytes and the device's free bytes, ``torch.cuda.mem_get_info``) and the device's
total. At the run's end (``graph_pool``): torch's CUDA-graph pool under reduce-overhead (the
cudagraph trees' private pool, its segments in the allocator's snapshot), or why not.
"""

from __future__ import annotations

import resource
import sys

from tuimon import events
from tuimon.events import STEP_PHASES

# Not before step 3: step 0 compiles, steps 1-2 warm up and record CUDA graphs (reduce-overhead).
FIRST = 3
COUNT = 2  # the steps measured; a phase's peak is the highest of them
NEVER = sys.maxsize  # no step: an int, so the loop's per-step compare stays int against int
_PARTS = STEP_PHASES + ("other",)  # runner/phases.py's part indices, as names


def _stat(stats: dict, key: str, which: str) -> int:
    return int(stats.get(key, {}).get("all", {}).get(which, 0))


class PhaseMemory:
    """``cuda``: torch.cuda (or a fake with ``memory_stats_as_nested_dict``,
    ``reset_peak_memory_stats``, ``mem_get_info``, ``get_device_properties``); ``index``: the
    device's index. ``at``: the next step to measure (NEVER once done)."""

    def __init__(self, cuda, index: int, first: int = FIRST, count: int = COUNT) -> None:
        self.cuda, self.index = cuda, index
        self.at = first
        self.left = count
        self.steps: list[int] = []
        self.peaks: dict[str, int] = {}  # phase -> highest peak over the measured steps
        self.ends: dict[str, int] = {}  # phase -> allocated as it ended (the last measured step)
        self.base: int | None = None  # allocated as the step began (weights, optimizer state)
        self._step_peaks: dict[str, int] = {}
        self._step_ends: dict[str, int] = {}
        self._step_base = 0
        self._next = 1  # a recipe's marks close forward, backward, optimizer in order
        self._window = [0, 0]  # allocated and reserved peaks of the flush window, across resets

    def _read(self) -> tuple[int, int]:
        stats = self.cuda.memory_stats_as_nested_dict(self.index)
        self.cuda.reset_peak_memory_stats(self.index)
        peak = _stat(stats, "allocated_bytes", "peak")
        # The flush window's peaks (the ``memory`` event's, runner/trainer.py's peak_memory) span
        # these resets: kept here, said in a memory event after the step (``window``).
        self._window[0] = max(self._window[0], peak)
        self._window[1] = max(self._window[1], _stat(stats, "reserved_bytes", "peak"))
        return peak, _stat(stats, "allocated_bytes", "current")

    def begin(self) -> None:
        """The measured step begins: its peaks start from here."""
        self._step_peaks, self._step_ends = {}, {}
        self._next = 1
        self._window = [0, 0]
        _, self._step_base = self._read()

    def window(self) -> dict:
        """The peaks the flush window had by the measured step's end (the resets cleared them):
        a ``memory`` event's fields, so its peaks stay the highest of every step."""
        return {"cuda_peak_allocated": self._window[0], "cuda_peak_reserved": self._window[1]}

    def close(self, part: int | None = None) -> None:
        """A part of the step ends now (``part``: runner/phases.py's index; None: the next of
        forward, backward, optimizer, as a recipe's marks come)."""
        if part is None:
            part, self._next = self._next, self._next + 1
        name = _PARTS[part] if 0 <= part < len(_PARTS) else "other"
        peak, current = self._read()
        self._step_peaks[name] = max(self._step_peaks.get(name, 0), peak)
        self._step_ends[name] = current

    def marker(self, mark, guard=None):
        """``mark`` (the step clock's) that also closes the part in memory, its read checked as
        tuimon's work under the sync ``guard``: a script's Timeline calls it with the part that
        ends, a recipe's trainer with none (the next in order)."""
        checked = guard is not None and guard.on

        def both(part: int | None = None):
            out = mark(part) if part is not None else mark()
            if checked:
                guard.ours()
            self.close(part)
            if checked:
                guard.theirs()
            return out
        return both

    def end(self, i: int, compiled: bool) -> dict | None:
        """Step ``i`` (a measured one) ended; ``compiled``: a compile ran in it (its memory is the
        compiler's too: measured again on the next step). The event's fields, with every step
        measured so far; None when this one does not count."""
        self.at = i + 1
        if compiled or not self._step_peaks:
            return None
        for name, peak in self._step_peaks.items():
            self.peaks[name] = max(self.peaks.get(name, 0), peak)
        self.ends.update(self._step_ends)
        self.base = self._step_base if self.base is None else max(self.base, self._step_base)
        self.steps.append(i)
        self.left -= 1
        if self.left <= 0:
            self.at = NEVER
        # Said after each measured step (the latest holds them all): a run stopped early still
        # says what it measured.
        order = [p for p in _PARTS if p in self.peaks]
        return {"steps": self.steps, "base": self.base,
                "phases": {p: {"peak": self.peaks[p], "end": self.ends.get(p)} for p in order},
                **self.room()}

    def room(self) -> dict:
        """What this process could hold at most (its allocator's reserved and the device's free
        bytes), and the device's total; {} where torch does not say."""
        out = {}
        try:
            free, total = self.cuda.mem_get_info(self.index)
            stats = self.cuda.memory_stats_as_nested_dict(self.index)
            out["budget"] = int(free) + _stat(stats, "reserved_bytes", "current")
            out["total"] = int(total)
        except Exception:  # noqa: BLE001 - a figure torch cannot give is left out, never fatal
            pass
        return out


class MemoryStep:
    """The step engine's component (runner/engine.py) for memory per phase: before each measured
    step, the allocator's counters reset and the step's marks also close its parts in memory;
    after it, its peaks said. A step a capture records is not one (the next is); at the run's
    end, a compiled variant's CUDA-graph pool."""

    def __init__(self, cuda, index: int, compiled: bool) -> None:
        self.mem = PhaseMemory(cuda, index)
        self.due = self.mem.at
        self.compiled = compiled

    def start(self, engine) -> None:
        engine.memory = self

    def boundary(self, engine, i: int) -> None:
        capture = engine.capture
        if capture is not None and capture.recording:
            self.due = self.mem.at = i + 1  # not in a capture: the next step
            return
        self.mem.begin()  # inside the boundary: tuimon's work (the sync guard's "ours")
        engine.mem_step, self.due = i, NEVER
        engine.use_marks(self.mem.marker(engine.clock.mark, engine.guard))

    def ended(self, engine, i: int, compiled: bool) -> None:
        """Step ``i``, the measured one, ended (``compiled``: a compile ran in it)."""
        engine.use_marks(engine.clock.mark)
        found = self.mem.end(i, compiled)
        engine.mem_step, self.due = NEVER, self.mem.at
        engine.emitter.emit(events.MEMORY, **self.mem.window())  # the window's peaks, kept
        if found is not None:
            engine.emitter.emit(events.MEMORY_PHASES, **found)

    def end(self, engine) -> None:
        if self.compiled:  # the CUDA-graph pool, once, outside every step
            engine.emitter.emit(events.MEMORY_PHASES, **graph_pool(self.mem.index))


def device_index(device: str) -> int:
    """The CUDA device's index ("cuda" alone: the current one)."""
    torch = sys.modules["torch"]
    index = torch.device(device).index
    return torch.cuda.current_device() if index is None else index


def peak_memory(device: str) -> dict:
    """The process's memory so far, read at each flush: ru_maxrss (its peak, KiB on Linux) and
    ru_minflt (its minor page faults: between two flushes of steady steps they say how often a
    step maps fresh memory, analysis/stats/faults.py), at no cost to the steps; on CUDA the
    allocator's peaks of this window (host-side counters, no sync), then a new window."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    out = {"peak_rss": usage.ru_maxrss * 1024, "minflt": usage.ru_minflt}
    if device.startswith("cuda"):
        torch = sys.modules["torch"]
        out["cuda_peak_allocated"] = torch.cuda.max_memory_allocated(device)
        out["cuda_peak_reserved"] = torch.cuda.max_memory_reserved(device)
        torch.cuda.reset_peak_memory_stats(device)
    return out


def graph_pool(index: int) -> dict:
    """torch's CUDA-graph pool on this device (the cudagraph trees of reduce-overhead): bytes
    its segments reserve (0: no tree manager, no pool), or ``graph_pool_unread`` saying why it
    cannot tell. Read once at the run's end, outside every step (a snapshot walks every segment)."""
    torch = sys.modules.get("torch")
    trees = sys.modules.get("torch._inductor.cudagraph_trees")
    if torch is None:
        return {}
    if trees is None:  # never imported: nothing ran under CUDA graphs
        return {"graph_pool": 0}
    try:
        manager = trees.get_manager(index, create_if_none_exists=False)
        if manager is None:
            return {"graph_pool": 0}
        pool = tuple(manager.cuda_graphs_thread_pool)
        segments = _snapshot(torch, pool)
        if any("segment_pool_id" not in s for s in segments):
            raise KeyError("the allocator's snapshot names no segment's pool")
        mine = [s for s in segments if tuple(s["segment_pool_id"]) == pool]
        return {"graph_pool": sum(int(s.get("total_size", 0)) for s in mine),
                "graph_pool_used": sum(int(s.get("allocated_size", 0)) for s in mine)}
    except Exception as exc:  # noqa: BLE001 - torch's internals move: say so, never fail the run
        return {"graph_pool": None, "graph_pool_unread": f"{type(exc).__name__}: {exc}"[:200]}


def _snapshot(torch, pool: tuple) -> list[dict]:
    """The allocator's segments: that pool's alone without the traces (torch 2.6+), else every
    segment without them, else every segment (older torch); filtered by pool by the caller."""
    for args, kwargs in (((pool,), {"include_traces": False}), ((None,), {"include_traces": False}),
                         ((), {})):
        try:
            return torch.cuda.memory_snapshot(*args, **kwargs)
        except (TypeError, RuntimeError):  # an older signature, a pool it will not single out
            continue
    return torch.cuda.memory_snapshot()
