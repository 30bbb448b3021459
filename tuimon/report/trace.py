"""``tuimon export --trace``: a session as one Chrome trace-event timeline; what its processes,
tracks and instants hold is docs/commands.md ("tuimon export"). Read a line at a time: steps and
samples (the bulk) go out as they come, what is held (phases, compiles, captures, instants: a
few a turn) is sorted per track and written at the end, so memory grows with the session's
turns and compiles, never its steps. Times are µs from the first event; a step that would start
before the previous one ended (two clocks: the host's ``t``, the step's timer ``ms``) starts
when it ended instead, its own ms kept in args."""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from tuimon import events
from tuimon.analysis import step_split
from tuimon.sessiondir import store

SESSION_PID = 1  # the session's own process: its samples and session-wide instants
# A run's tracks, in the order they are shown.
PHASES, STEPS, COMPILES, CAPTURES, SAID = "phases", "steps", "compiles", "profiler captures", "said"
COMPILE_TRACKS = {None: COMPILES, "validation": "compiles: validation passes",
                  "no_grad": "compiles: no_grad calls"}
KINDS = (PHASES, STEPS, *COMPILE_TRACKS.values(), CAPTURES, SAID)
COMPILE_PARTS = ("dynamo", "aot", "inductor", "codegen")
PARTS_NOTE = "per-step totals, laid end to end (not the order they ran in)"
MIB = 1 << 20
# Counters: the sample's field, the track's name and unit (args' key), the value's scale.
RUN_COUNTERS = (("cpu_percent", "CPU", "%", 1), ("rss", "RSS", "MiB", MIB),
                ("gpu_mem", "GPU memory", "MiB", MIB), ("sm_util", "GPU SM", "%", 1))
SYSTEM_COUNTERS = (("cpu_percent", "system CPU", "%", 1), ("mem_used", "system memory", "MiB", MIB))
# The runner's memory events (its peaks so far; on CUDA, the window's).
MEMORY_COUNTERS = (("peak_rss", "peak RSS", "MiB", MIB),
                   ("cuda_peak_allocated", "CUDA peak allocated", "MiB", MIB),
                   ("cuda_peak_reserved", "CUDA peak reserved", "MiB", MIB))
DEVICE_COUNTERS = (("util_gpu", "util", "%", 1), ("mem_used", "memory", "MiB", MIB),
                   ("temp_c", "temperature", "°C", 1), ("power_w", "power", "W", 1))
STEP_ARGS = ("i", "ms", "loss", "n", "data_ms", "phase", "compile_ms", "profiled", "gap", "mem", "pre_ms")
COMPILE_ARGS = ("compile_id", "forward", "frame", "where", "seconds", "graph_ops", "guards", "graph_breaks",
                "recompile_reason", "cache", "kernels", "graph", "failed", "fail_reason", "outside")


@dataclass
class Tracks:
    """Process and thread ids: a run's pid in the order runs appear, a tid per (rank, kind, lane)."""

    pids: dict[str, int] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)  # run -> mode/precision, device
    tids: dict[tuple[int, int | None, str, int], int] = field(default_factory=dict)

    def pid(self, run: str | None) -> int:
        if run is None:
            return SESSION_PID
        return self.pids.setdefault(run, SESSION_PID + 1 + len(self.pids))

    def tid(self, run: str | None, rank: int | None, kind: str, lane: int = 0) -> tuple[int, int]:
        pid = self.pid(run)
        key = (pid, rank, kind, lane)
        return pid, self.tids.setdefault(key, 1 + len(self.tids))

    def metadata(self) -> list[dict]:
        out = [_meta("process_name", SESSION_PID, 0, name="session"),
               _meta("process_sort_index", SESSION_PID, 0, sort_index=0)]
        for run, pid in self.pids.items():
            out += [_meta("process_name", pid, 0, name=run),
                    _meta("process_sort_index", pid, 0, sort_index=pid)]
            if run in self.labels:
                out.append(_meta("process_labels", pid, 0, labels=self.labels[run]))
        for (pid, rank, kind, lane), tid in self.tids.items():
            name = kind if rank is None else f"rank {rank} · {kind}"
            name += f" ({lane + 1})" if lane else ""
            order = (0 if rank is None else rank) * 100 + KINDS.index(kind) * 10 + lane
            out += [_meta("thread_name", pid, tid, name=name),
                    _meta("thread_sort_index", pid, tid, sort_index=order)]
        return out


def _meta(what: str, pid: int, tid: int, **args) -> dict:
    return {"name": what, "ph": "M", "ts": 0, "pid": pid, "tid": tid, "args": args}


class Trace:
    """Events in, trace events out: ``add`` returns what can be written now, ``finish`` the rest."""

    def __init__(self) -> None:
        self.t0: float | None = None
        self.tracks = Tracks()
        self.steps = 0
        self._step_end: dict[tuple[int, int], int] = {}  # step track -> its last step's end (µs)
        self._changes: dict[tuple[str, int | None], list[tuple[int, dict]]] = {}  # phase changes
        self._ends: dict[tuple[str, int | None], int] = {}  # a run's (a rank's) end
        self._seen: dict[str, int] = {}  # a run's latest event
        self._open: dict[tuple[str, int | None, int | None], dict] = {}  # captures started, not done
        self._held: dict[tuple[int, int], list[dict]] = {}  # track -> slices and instants to sort
        self._compiles: dict[tuple[str, int | None, str], list[dict]] = {}

    def us(self, t: float) -> int:
        """Whole µs since the session's first event (never before it): a ts + dur then sums
        exactly (float µs did not: a slice seemed to end past the next one's start, and viewers
        nested them)."""
        assert self.t0 is not None  # add() kept the first event's
        return max(0, round((t - self.t0) * 1e6))

    def add(self, e: dict) -> list[dict]:
        t = e.get("t")
        if not isinstance(t, (int, float)):
            return []
        if self.t0 is None:
            self.t0 = float(t)
        kind, run, rank = e["type"], e.get("run"), e.get("rank")
        at = self.us(t)
        if run is not None:
            self._seen[run] = max(self._seen.get(run, 0), at)
            self.tracks.pid(run)
        if kind == events.STEP and run is not None:
            return self._step(e, run, rank, at)
        if kind == events.SAMPLE:
            return self._sample(e, at)
        if kind == events.MEMORY and run is not None:  # the run's own word on its peaks
            who = "" if rank is None else f"rank {rank} "
            out = [_counter(self.tracks.pid(run), at, who + name, unit, e.get(key), scale)
                   for key, name, unit, scale in MEMORY_COUNTERS]
            return [c for c in out if c is not None]
        self._hold(e, kind, run, rank, at)
        return []

    def _step(self, e: dict, run: str, rank: int | None, end: int) -> list[dict]:
        pid, tid = self.tracks.tid(run, rank, STEPS)
        ms = e.get("ms")
        if not isinstance(ms, (int, float)):
            return []
        dur = max(0, round(ms * 1e3))
        start = max(end - dur, self._step_end.get((pid, tid), 0))
        self._step_end[(pid, tid)] = start + dur
        self.steps += 1
        args = {k: e[k] for k in STEP_ARGS if e.get(k) is not None}
        split = step_split(e)
        if split:
            args["parts"] = PARTS_NOTE
        out = [{"name": "step", "cat": "step", "ph": "X", "ts": start, "dur": dur, "pid": pid,
                "tid": tid, "args": args}]
        cursor, stop = start, start + dur
        for name, part_ms in split.items():
            if part_ms is None or part_ms <= 0:
                continue
            length = min(round(part_ms * 1e3), stop - cursor)
            if length <= 0:
                break
            out.append({"name": name, "cat": "step part", "ph": "X", "ts": cursor, "dur": length,
                        "pid": pid, "tid": tid, "args": {"ms": round(part_ms, 4)}})
            cursor += length
        return out

    def _sample(self, e: dict, at: int) -> list[dict]:
        out = [_counter(SESSION_PID, at, name, unit, (e.get("system") or {}).get(key), scale)
               for key, name, unit, scale in SYSTEM_COUNTERS]
        for dev in e.get("devices") or ():
            k = dev.get("index")
            out += [_counter(SESSION_PID, at, f"GPU {k} {name}", unit, dev.get(key), scale)
                    for key, name, unit, scale in DEVICE_COUNTERS]
        for run, values in (e.get("runs") or {}).items():
            pid = self.tracks.pid(run)
            out += [_counter(pid, at, name, unit, values.get(key), scale)
                    for key, name, unit, scale in RUN_COUNTERS]
        return [c for c in out if c is not None]

    def _hold(self, e: dict, kind: str, run: str | None, rank: int | None, at: int) -> None:
        if kind == events.RUN_STARTED and run is not None and rank in (None, 0):
            self.tracks.labels[run] = ", ".join(str(x) for x in (
                f"{e.get('mode')}/{e.get('precision')}", e.get("device_name"),
                f"world {e['world_size']}" if e.get("world_size") else None) if x)
        elif kind == events.PHASE and run is not None:
            self._changes.setdefault((run, rank), []).append((at, e))
        elif kind in (events.FINISHED, events.FAILED) and run is not None:
            self._ends[(run, rank)] = max(self._ends.get((run, rank), 0), at)
        elif kind == events.RUN_EXITED and run is not None:
            self._ends.setdefault((run, None), at)
        if kind == events.COMPILE and run is not None:
            track = _compile_track(e)
            self._compiles.setdefault((run, rank, track), []).append(e)
        elif kind in (events.GRAPH_BREAK, events.RECOMPILE) and run is not None:
            track = _compile_track(e)
            self._instant(e, run, rank, track, at)
        elif kind == events.PROFILE and run is not None:
            self._capture(e, run, rank, at)
        elif kind in (events.WARNING, events.FAILED, events.CONTROL, events.CUDAGRAPHS):
            self._instant(e, run, rank, PHASES if run is not None else SAID, at)

    def _instant(self, e: dict, run: str | None, rank: int | None, track: str, at: int) -> None:
        pid, tid = self.tracks.tid(run, rank, track)
        name = e["type"].replace("_", " ")
        if e["type"] == events.CONTROL:
            name = f"{name}: {e.get('action')}"
        args = {k: v for k, v in e.items() if k not in ("type", "t", "run", "rank")}
        self._held.setdefault((pid, tid), []).append(
            {"name": name, "cat": e["type"], "ph": "i", "s": "t" if run is not None else "p", "ts": at,
             "pid": pid, "tid": tid, "args": args})

    def _capture(self, e: dict, run: str, rank: int | None, at: int) -> None:
        key = (run, rank, e.get("capture"))
        if e.get("state") == "started":
            self._open[key] = {"at": at, "started": e}
            return
        opened = self._open.pop(key, None)
        start = opened["at"] if opened else at
        self._capture_slice(run, rank, start, at, e)

    def _capture_slice(self, run: str, rank: int | None, start: int, end: int, e: dict) -> None:
        pid, tid = self.tracks.tid(run, rank, CAPTURES)
        keep = ("state", "source", "window", "active_steps", "recorded_steps", "partial", "step_ms", "split",
                "trace", "error", "notes")
        self._held.setdefault((pid, tid), []).append(
            {"name": f"capture {e.get('capture')}", "cat": "profile", "ph": "X", "ts": start,
             "dur": max(0, end - start), "pid": pid, "tid": tid,
             "args": {k: e[k] for k in keep if e.get(k) is not None}})

    def finish(self) -> list[dict]:
        """What was held, each track in time order, then the names of every process and track."""
        for (run, rank, _), opened in self._open.items():  # a capture the run never finished
            self._capture_slice(run, rank, opened["at"], self._end(run, rank), opened["started"])
        for (run, rank), changes in self._changes.items():
            self._phase_slices(run, rank, sorted(changes, key=lambda c: c[0]))
        for (run, rank, track), compiles in self._compiles.items():
            self._compile_slices(run, rank, track, compiles)
        out = []
        for held in self._held.values():
            # in time order; a slice before what it holds (the longer first at the same start)
            out += sorted(held, key=lambda x: (x["ts"], -x.get("dur", 0)))
        return out + self.tracks.metadata()

    def _end(self, run: str, rank: int | None) -> int:
        return self._ends.get((run, rank)) or self._ends.get((run, None)) or self._seen.get(run, 0)

    def _phase_slices(self, run: str, rank: int | None, changes: list[tuple[int, dict]]) -> None:
        pid, tid = self.tracks.tid(run, rank, PHASES)
        ends = [at for at, _ in changes[1:]] + [max(self._end(run, rank), changes[-1][0])]
        for (at, e), end in zip(changes, ends, strict=True):
            args = {k: v for k, v in e.items() if k not in ("type", "t", "run", "rank", "phase")}
            self._held.setdefault((pid, tid), []).append(
                {"name": str(e.get("phase")), "cat": "phase", "ph": "X", "ts": at, "dur": end - at,
                 "pid": pid, "tid": tid, "args": args})

    def _compile_slices(self, run: str, rank: int | None, track: str, compiles: list[dict]) -> None:
        """Each compile a slice ending at its event, its phases (each alone) laid end to end inside;
        one that overlaps another without holding it goes on a lane of its own."""
        spans = []
        for e in compiles:
            end = self.us(e["t"])
            spans.append((max(0, end - round((e.get("seconds") or 0) * 1e6)), end, e))
        lanes: list[int] = []  # each lane's latest end
        for start, end, e in sorted(spans, key=lambda s: (s[0], -s[1])):
            lane = next((k for k, last in enumerate(lanes) if last <= start), len(lanes))
            lanes[lane:lane + 1] = [end]
            pid, tid = self.tracks.tid(run, rank, track, lane)
            name = f"compile {e.get('compile_id')}" + ("" if e.get("forward", True) else " (backward)")
            held = self._held.setdefault((pid, tid), [])
            args = {k: e[k] for k in COMPILE_ARGS if e.get(k) is not None} | {"phases_s": e.get("phases")}
            held.append({"name": name, "cat": "compile", "ph": "X", "ts": start, "dur": end - start,
                         "pid": pid, "tid": tid, "args": args})
            cursor = start
            for part in COMPILE_PARTS:
                seconds = (e.get("phases") or {}).get(part) or 0
                length = min(round(seconds * 1e6), end - cursor)
                if length <= 0:
                    continue
                held.append({"name": part, "cat": "compile phase", "ph": "X", "ts": cursor,
                             "dur": length, "pid": pid, "tid": tid, "args": {"s": seconds}})
                cursor += length


def _compile_track(e: dict) -> str:
    """Training's compiles, or a validation pass's, or a no_grad call's (kept apart, as the
    statistics keep them: runner/script/validation.py)."""
    if not e.get("validation"):
        return COMPILES
    return COMPILE_TRACKS.get(e.get("outside") or "validation", COMPILE_TRACKS["validation"])


def _counter(pid: int, at: int, name: str, unit: str, value, scale: int) -> dict | None:
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return None
    return {"name": name, "cat": "sample", "ph": "C", "ts": at, "pid": pid, "tid": 0,
            "args": {unit: round(value / scale, 3)}}


def write(evs: Iterable[dict], out, other: dict) -> tuple[Trace, int]:
    """The trace as one JSON object into the text file ``out``, an event a line, streamed;
    returns the Trace and how many trace events were written."""
    trace = Trace()
    encode = json.JSONEncoder(separators=(",", ":"), default=str).encode  # one encoder: ~20 % faster
    out.write('{"traceEvents":[\n')
    n = 0
    for e in evs:
        for item in trace.add(e):
            out.write((",\n" if n else "") + encode(item))
            n += 1
    for item in trace.finish():
        out.write((",\n" if n else "") + encode(item))
        n += 1
    header = {"displayTimeUnit": "ms", "otherData": {**other, "t0": trace.t0, "steps": trace.steps,
                                                      "step parts": PARTS_NOTE}}
    out.write("\n]," + json.dumps(header, separators=(",", ":"), default=str)[1:] + "\n")
    return trace, n


@dataclass
class Written:
    path: Path
    bytes: int
    events: int  # trace events
    steps: int
    runs: int
    unreadable: int  # events.jsonl lines skipped


def export(session: str | Path, target: Path, other: dict) -> Written:
    """SESSION's events, read a line at a time, as the trace FILE: written beside it and moved
    over it, so it is whole or not there (raises OSError)."""
    counts: dict[str, int] = {}
    tmp = target.with_name(target.name + ".tmp")
    try:
        with open(tmp, "w", encoding="utf-8") as out:
            trace, n = write(store.iter_events(session, counts), out, other)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    return Written(target, target.stat().st_size, n, trace.steps, len(trace.tracks.pids),
                   counts.get("bad", 0))
