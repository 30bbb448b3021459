"""A script run's end, as its hooks see it: the steps measured so far handed over, then the
``finished`` event at the interpreter's exit (atexit) or a ``failed`` one for an exception the
script did not catch (sys.excepthook); and the no-step watch's question, whether the script has
stepped at all. A mixin of ``ScriptSteps`` (runner/script/steps.py), whose state it reads."""

from __future__ import annotations

import contextlib
import time

from tuimon import events, failures
from tuimon.runner.crash import cuda_memory
from tuimon.runner.loop import peak_memory
from tuimon.runner.memory_phases import graph_pool
from tuimon.runner.script.fixes import settle
from tuimon.runner.steps import _emit_ready


class ScriptEnd:
    def flush_measured(self) -> None:
        """Hand over every step measured so far (and end an open capture)."""
        if self.clock is None:
            self.emitter.flush()
            return
        with contextlib.suppress(Exception):
            _emit_ready(self.emitter, self.clock.drain(), self.ring, self.losses, self.i, self.warmup)
        with contextlib.suppress(Exception):
            self.emitter.emit(events.MEMORY, **peak_memory(self.device))
        if self.profiler is not None:
            result = self.profiler.abort(self.watch.count)
            if result is not None:
                self.emitter.emit(events.PROFILE, **result)
        self.emitter.flush()

    def finished(self) -> None:
        """The interpreter is exiting (atexit): the steps, then why it ended."""
        self.guard.restore()
        if self.enabled or self.reason is not None:
            if self.mem is not None and self.settings.mode != "eager":  # the CUDA-graph pool, once
                with contextlib.suppress(Exception):
                    self.emitter.emit(events.MEMORY_PHASES, **graph_pool(self.mem.index))
            self.flush_measured()
        self.enabled = False
        if self.failed:
            return
        settle(self.fixes)  # each fix nothing was said of: not applied, and why
        if self.compile_asked is not None and self.compile_asked() and (
                text := self.watch.nothing_compiled(self.settings.mode)):
            self.emitter.emit_now(events.WARNING, text=text)
        self.emitter.emit_now(
            events.FINISHED, reason=self.reason or events.SCRIPT_ENDED,
            seconds=round(time.monotonic() - self._began, 3), paused_s=round(self.control.paused_s, 3),
            compiles=self.watch.train_count, graph_breaks=self.trace.graph_breaks if self.trace else 0,
            recompiles=self.trace.recompiles if self.trace else 0,
            compile_s=round(self.watch.train_s, 3), val_compiles=self.watch.val_count,
            val_compile_s=round(self.watch.val_s, 3),
            val_recompiles=self.trace.val_recompiles if self.trace else 0,
            profile_s=round(self.profiler.overhead_s, 4) if self.profiler else 0.0)

    def crashed(self, exc: BaseException, tb_text: str, where: str | None) -> None:
        """An exception the script did not catch (sys.excepthook)."""
        if isinstance(exc, KeyboardInterrupt):
            if self.reason is None:
                self.reason = "stopped"  # Ctrl-C's SIGINT (the supervisor's escalation)
            return
        if self.reason is not None and not self.enabled:
            self.after_stop(exc, where)  # tuimon ended its training: what it ran after is not a failure
            return
        if self.enabled:
            self.flush_measured()
        self.enabled, self.failed = False, True
        memory = cuda_memory(exc)
        text = failures.plain(str(exc)).strip()  # a coloured message: its text
        self.emitter.emit_now(
            events.FAILED, stage="step" if self.i else "build", error=type(exc).__name__,
            message=text.splitlines()[0][:500] if text else "", traceback=failures.plain(tb_text),
            where=where, **failures.of_exception(exc, memory), **memory)

    def after_stop(self, exc: BaseException, where: str | None) -> None:
        """tuimon stopped the script (--steps, --duration, a stop) and its own code after the
        training loop then raised: word_language_model loads the checkpoint it saves at an
        epoch's end, which a run stopped before that never wrote. The measured steps stand and
        the run is not failed (issue 33.8); a note says what was raised, and why."""
        text = failures.plain(str(exc)).strip().splitlines()
        what = f"{type(exc).__name__}: {text[0][:300]}" if text else type(exc).__name__
        at = f" at {where}" if where else ""
        missing = isinstance(exc, FileNotFoundError)
        why = ("it was stopped before it wrote the file it reads there" if missing else
               "that code ran on a training tuimon had cut short")
        self.emitter.emit_now(events.WARNING, note=True, after_stop=what, text=(
            f"after tuimon stopped it ({self.reason}, at step {self.i}), the script's own code "
            f"raised {what}{at}: {why}; its measured steps stand (give it more --steps, or "
            "--duration, to reach that point)"))

    def no_step_yet(self, seconds: float) -> bool | None:
        """True: no step ``seconds`` after start (or after its first turn came), compiles left
        out; None: not yet known (waiting for its first turn, compiling, or not that long). A
        first ``optimizer.step()`` still compiling is no missing step."""
        if not self.enabled or self.boundaries:
            return False
        if self._booted is None or self.watch.active:
            return None
        compiling = self.watch.total_s - self._compiled_at_boot
        if time.monotonic() - self._booted - compiling < seconds:
            return None
        return True

