"""``tuimon export --tensorboard DIR``: each run of a session as a TensorBoard run, DIR/<run>/
(what it holds: docs/commands.md, "tuimon export"). Written with tensorboardX, never torch's own
writer: this side never imports torch. The figures are the Collector's, read a line at a time,
not recomputed. TensorBoard drops what a file says at a step below one it has seen (it takes
that for a restarted job), so a run's events go out in step order: a compile's figures wait for
its step, the texts go at the run's last step."""

from __future__ import annotations

import contextlib
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from tuimon import events
from tuimon.analysis import Collector, step_split
from tuimon.report import export as summary_export
from tuimon.report import verdict_text
from tuimon.sessiondir import store

INSTALL = "pip install 'tensorboardX>=2.6' (or pip install 'tuimon[tensorboard]')"
EVENT_FILES = "events.out.tfevents.*"  # what a writer names its files (--overwrite removes these)


class Missing(Exception):
    """tensorboardX cannot be imported: the one line says how to install it."""


class Occupied(Exception):
    """A run's directory already holds event files (without --overwrite): one line."""


def _tensorboardx():
    """tensorboardX's event file, its Event and Summary records, its text summary. tensorboardX imports torch
    when it can (to accept its tensors); this side never imports torch, so torch is hidden from
    it while it loads (it then takes numpy alone)."""
    hidden = "torch" not in sys.modules
    if hidden:
        sys.modules["torch"] = None  # an import of it raises ImportError, which tensorboardX expects
    try:
        from tensorboardX.event_file_writer import EventsWriter
        from tensorboardX.proto.event_pb2 import Event
        from tensorboardX.proto.summary_pb2 import Summary
        from tensorboardX.summary import text
    except ImportError as exc:
        raise Missing(f"tuimon export --tensorboard writes with tensorboardX, which is not installed "
                      f"({exc}): {INSTALL}") from None
    finally:
        if hidden and sys.modules.get("torch", 0) is None:
            del sys.modules["torch"]
    return _Writer.make(EventsWriter, Event), Summary, text


@dataclass
class Written:
    path: Path
    runs: list[str]
    steps: int
    unreadable: int


@dataclass
class _Writer:
    """A run's event file, written as it goes: tensorboardX's EventsWriter, not its FileWriter,
    whose queue to a thread (each event pickled across) took two thirds of the time."""

    file: object
    Event: type

    @classmethod
    def make(cls, EventsWriter, Event):
        def opened(run_dir: Path) -> _Writer:
            run_dir.mkdir(parents=True, exist_ok=True)
            return cls(EventsWriter(str(run_dir / "events")), Event)
        return opened

    def add_summary(self, summary, step: int, t: float | None) -> None:
        self.file.write_event(self.Event(wall_time=time.time() if t is None else t, step=step,
                                         summary=summary))

    def close(self) -> None:
        self.file.close()


@dataclass
class _Run:
    """One run's writer and what waits for its next step."""

    writer: object
    last: int = -1  # the step last written
    raw: int = -1  # the latest step of its own (a job's rank 0's), for the step a compile fell in
    pending: dict[int, list[float]] = field(default_factory=dict)  # step -> compiles' seconds
    compiles: list[str] = field(default_factory=list)  # Markdown rows
    t: float | None = None  # the latest walltime


def check(target: Path) -> None:
    """An earlier export's runs in DIR: TensorBoard would mix both (a run's two files read as one).
    Raises Occupied (the command asks before it writes anything)."""
    found = sorted(target.glob(f"*/{EVENT_FILES}")) if target.is_dir() else []
    if found:
        raise Occupied(f"--tensorboard {target}: {found[0].parent} holds event files already "
                       "(TensorBoard would mix both exports): --overwrite replaces them")


def _dir_name(run: str) -> str:
    """The run's directory in DIR: its name (file-system safe, variants.py), never a path out."""
    return "".join(c if c.isalnum() or c in "-_.=+," else "_" for c in run).lstrip(".") or "_"


def _clear(run_dir: Path) -> None:
    """--overwrite: the event files of the run's directory go (nothing else in it)."""
    for old in run_dir.glob(EVENT_FILES) if run_dir.is_dir() else ():
        old.unlink()


def export(session: str | Path, target: Path, overwrite: bool = False) -> Written:
    """Every run of SESSION as DIR/<run>/; raises Missing, Occupied, OSError, ValueError."""
    opened, Summary, text = _tensorboardx()
    meta = store.read_meta(session)
    if not overwrite:
        check(target)
    counts: dict[str, int] = {}
    collector = Collector()
    open_runs: dict[str, _Run] = {}
    steps = 0

    def run_of(run: str) -> _Run:
        if run not in open_runs:
            _clear(target / _dir_name(run))
            open_runs[run] = _Run(opened(target / _dir_name(run)))
        return open_runs[run]

    try:
        for e in store.iter_events(session, counts):
            for s in collector.add(e):
                _step(Summary, run_of(s["run"]), s)
                steps += 1
            run = e.get("run")
            if run is None or e.get("rank") not in (None, 0):
                continue
            if e["type"] == events.STEP:
                run_of(run).raw = max(run_of(run).raw, e.get("i", 0))
            elif e["type"] == events.COMPILE:
                _compile(run_of(run), e)
        summary = collector.summary()
        summary.unreadable_lines = counts.get("bad", 0)
        said = {"tuimon/verdict": verdict_text.line(summary.verdict) if summary.verdict else "no verdict",
                "tuimon/summary": summary_export.to_markdown(meta, summary)}
        for r in summary.runs:
            _finish(Summary, text, run_of(r.run), said)
    finally:
        for r in open_runs.values():
            with contextlib.suppress(Exception):
                r.writer.close()
    return Written(target, list(open_runs), steps, counts.get("bad", 0))


def _step(Summary, r: _Run, s: dict) -> None:
    """One step's values as one event at its step; the compiles that fell in it (or before)."""
    ms, i = s.get("ms"), s.get("i", r.last + 1)
    values = [("step/time_ms", ms)]
    if isinstance(ms, (int, float)) and ms > 0:
        values.append(("step/steps_per_s", 1000.0 / ms))
        if s.get("n"):
            values.append(("step/samples_per_s", s["n"] * 1000.0 / ms))
    values.append(("step/loss", s.get("loss")))
    values += [(f"phase/{name}_ms", part) for name, part in step_split(s).items()]
    if s.get("compile_ms"):
        values.append(("step/compile_ms", s["compile_ms"]))
    due = [k for k in r.pending if k <= i]
    seconds = [x for k in due for x in r.pending.pop(k)]
    if seconds:
        values += [("compile/seconds", sum(seconds)), ("compile/count", len(seconds))]
    _write(Summary, r, values, i, s.get("t"))


def _write(Summary, r: _Run, values: list, step: int, t: float | None) -> None:
    summary = Summary(value=[Summary.Value(tag=tag, simple_value=float(v)) for tag, v in values
                             if isinstance(v, (int, float))])
    step = max(step, r.last)  # never below a step written (TensorBoard would drop the later ones)
    r.writer.add_summary(summary, step, t)
    r.last, r.t = step, t if t is not None else r.t


def _compile(r: _Run, e: dict) -> None:
    """A compile ends inside the step after the run's latest: its seconds wait for that step."""
    step = r.raw + 1
    r.pending.setdefault(step, []).append(e.get("seconds") or 0.0)
    phases = " · ".join(f"{k} {v:.2f} s" for k, v in (e.get("phases") or {}).items() if v)
    where = "validation" if e.get("validation") else ("forward" if e.get("forward", True) else "backward")
    r.compiles.append(f"| {step} | {e.get('compile_id')} | {where} | {e.get('seconds') or 0:.2f} s | "
                      f"{phases or '–'} | {e.get('graph_ops') or 0} | {e.get('graph_breaks') or 0} |")


def _finish(Summary, text, r: _Run, said: dict[str, str]) -> None:
    """The compiles still waiting (after the run's last step), then the texts, at its last step."""
    if r.pending:
        seconds = [x for v in r.pending.values() for x in v]
        _write(Summary, r, [("compile/seconds", sum(seconds)), ("compile/count", len(seconds))],
               max(r.last, max(r.pending)), r.t)
        r.pending.clear()
    step = max(r.last, 0)
    if r.compiles:
        table = ["| step | compile | of | seconds | phases | ops | graph breaks |",
                 "|---|---|---|---|---|---|---|", *r.compiles]
        r.writer.add_summary(text("tuimon/compiles", "\n".join(table)), step, r.t)
    for tag, words in said.items():
        r.writer.add_summary(text(tag, words), step, r.t)
