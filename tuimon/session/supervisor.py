"""Starts one runner child per variant, reads their events, writes the store, reports to a sink.

Each child gets a pipe for events (``--event-fd``; stdout and stderr go to its log file) and
its own process group, so a Ctrl-C in the terminal reaches the supervisor alone, which then
stops the children at a step boundary and still writes everything they measured.
"""

from __future__ import annotations

import contextlib
import os
import queue
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from tuimon import events
from tuimon.session.sampler import Sampler
from tuimon.session.store import SessionStore
from tuimon.variants import Variant

Sink = Callable[[list[dict]], None]


@dataclass
class Plan:
    recipe: Path
    variants: list[Variant]
    schedule: str = "sequential"  # or "parallel"
    runner_args: list[str] = field(default_factory=list)  # --steps, --seed, ... for every run
    cache_dir: Path | None = None  # None: a fresh Inductor cache per run (honest cold compile)
    stop_grace_s: float = 10.0
    interval: float | None = 1.0  # probe sampling period, seconds; None: no probes


@dataclass
class Child:
    variant: Variant
    proc: subprocess.Popen
    started: float
    ended: bool = False  # finished or failed event seen
    failed_build: bool = False


class Supervisor:
    def __init__(self, store: SessionStore, plan: Plan, sink: Sink | None = None,
                 gpu_probe=None) -> None:
        self.store = store
        self.plan = plan
        self.sink = sink or (lambda batch: None)
        self._inbox: queue.Queue = queue.Queue()
        self._children: dict[str, Child] = {}
        self.build_failure: dict | None = None  # the first build-stage failure, if any
        self.failed_runs: list[str] = []
        self.interrupted = False
        self._sampler = Sampler(plan.interval, self.live_pids,
                                lambda batch: self._inbox.put((None, batch)),
                                gpu=gpu_probe) if plan.interval else None

    # ---- public -------------------------------------------------------------------------
    def run(self) -> str:
        """Run every variant per the schedule; returns 'done', 'failed' or 'interrupted'."""
        queued = list(self.plan.variants)
        self._record([events.make(events.RUN_QUEUED, v.run_id, mode=v.mode, precision=v.precision)
                      for v in queued])
        parallel = self.plan.schedule == "parallel"
        threads = max(1, (os.cpu_count() or 1) // len(queued)) if parallel else None
        if self._sampler:
            self._sampler.start()
        try:
            while queued or self._children:
                while queued and (parallel or not self._children) and not self._aborting:
                    self._start(queued.pop(0), threads)
                if self._aborting and not self._children:
                    break
                self._pump(0.2)
        except KeyboardInterrupt:
            self.interrupted = True
            self.stop_all()
        except BaseException:
            self.stop_all()  # a bug on this side must not leave orphans behind
            raise
        finally:
            if self._sampler:
                self._sampler.stop()
        self._pump(0)  # the last samples
        status = "interrupted" if self.interrupted else (
            "failed" if self.failed_runs or self.build_failure else "done")
        self._record([events.make(events.SESSION_ENDED, status=status)])
        return status

    def stop_all(self) -> None:
        """SIGINT each child's group (it finishes its step and flushes), then escalate."""
        self._signal_all(signal.SIGINT)
        deadline = time.monotonic() + self.plan.stop_grace_s
        while self._children and time.monotonic() < deadline:
            try:
                self._pump(0.1)
            except KeyboardInterrupt:
                break  # a second Ctrl-C: stop waiting
        self._signal_all(signal.SIGKILL)
        while self._children:
            self._pump(0.1)

    def live_pids(self) -> dict[str, int]:
        """Run id -> runner pid of the children alive now (read by the sampler thread)."""
        return {run: child.proc.pid for run, child in list(self._children.items())}

    # ---- internals ----------------------------------------------------------------------
    @property
    def _aborting(self) -> bool:
        return self.build_failure is not None or self.interrupted

    def _start(self, variant: Variant, threads: int | None) -> None:
        run = variant.run_id
        read_fd, write_fd = os.pipe()
        cmd = [sys.executable, "-m", "tuimon.runner", "--recipe", str(self.plan.recipe),
               "--run-id", run, "--mode", variant.mode, "--precision", variant.precision,
               "--event-fd", str(write_fd), *self.plan.runner_args]
        if threads:
            cmd += ["--threads", str(threads)]
        cache = self.plan.cache_dir or self._fresh_cache(run)
        env = {**os.environ, "PYTHONUNBUFFERED": "1", "TORCHINDUCTOR_CACHE_DIR": str(cache),
               "TRITON_CACHE_DIR": str(Path(cache) / "triton")}
        with open(self.store.log_path(run), "ab") as log:
            proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log,
                                    stderr=subprocess.STDOUT, pass_fds=(write_fd,), env=env,
                                    start_new_session=True)
        os.close(write_fd)
        self._children[run] = Child(variant, proc, time.monotonic())
        threading.Thread(target=self._read, args=(run, read_fd), daemon=True).start()

    def _fresh_cache(self, run: str) -> Path:
        return self.store.path / "inductor-cache" / run

    def _read(self, run: str, fd: int) -> None:
        """Reader thread: whole lines from the child's pipe into the inbox; None at EOF."""
        rest = b""
        with os.fdopen(fd, "rb", buffering=0) as pipe:
            while chunk := pipe.read(65536):
                lines = (rest + chunk).split(b"\n")
                rest = lines.pop()
                batch = [e for e in (events.decode(x.decode("utf-8", "replace")) for x in lines) if e]
                if batch:
                    self._inbox.put((run, batch))
        self._inbox.put((run, None))

    def _pump(self, timeout: float) -> None:
        """Move what the children sent into the store and the sink; reap children at EOF."""
        try:
            item = self._inbox.get(timeout=timeout)
        except queue.Empty:
            return
        while True:
            run, batch = item
            if batch is None:
                self._reap(run)
            else:
                if run is not None:  # a child's events (None: the sampler's)
                    for e in batch:
                        e["run"] = run  # the supervisor, not the child, decides who said it
                        self._note(run, e)
                self._record(batch)
            try:
                item = self._inbox.get_nowait()
            except queue.Empty:
                return

    def _note(self, run: str, e: dict) -> None:
        child = self._children.get(run)
        if child is None:
            return
        if e["type"] in (events.FINISHED, events.FAILED):
            child.ended = True
        if e["type"] == events.FAILED:
            self.failed_runs.append(run)
            if e.get("stage") == "build" and self.build_failure is None:
                self.build_failure = e
                self._signal_all(signal.SIGINT)  # same recipe, same fault: stop the others

    def _reap(self, run: str) -> None:
        child = self._children.pop(run)
        rc = child.proc.wait()
        if self.plan.cache_dir is None:  # a cold-compile cache is of no use afterwards
            shutil.rmtree(self._fresh_cache(run), ignore_errors=True)
        seconds = round(time.monotonic() - child.started, 3)
        batch = [events.make(events.RUN_EXITED, run, returncode=rc, seconds=seconds)]
        if not child.ended:
            how = (f"killed by {signal.Signals(-rc).name}" if rc < 0 else f"exited with code {rc}")
            batch.insert(0, events.make(events.FAILED, run, stage="crash", error="ChildExited",
                                        message=f"runner {how} without a result",
                                        returncode=rc, traceback=log_tail(self.store.log_path(run))))
            self.failed_runs.append(run)
        self._record(batch)

    def _signal_all(self, sig: int) -> None:
        for child in self._children.values():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(child.proc.pid, sig)

    def _record(self, batch: list[dict]) -> None:
        self.store.append(batch)
        self.sink(batch)


def log_tail(path: Path, lines: int = 15) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(max(0, os.path.getsize(path) - 16384))
            text = f.read().decode("utf-8", "replace")
    except OSError:
        return ""
    return "\n".join(text.rstrip().splitlines()[-lines:])
