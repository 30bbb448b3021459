"""Notices when torch.compile is compiling, so steps that include a compile are kept apart.

Uses Dynamo's start/end callbacks (fired for each frame compile and each lazy backward
compile, never on a cache lookup), so steady-state steps pay nothing.

A compile *start* is an attempt: it disturbs its step whatever comes of it (``count``). What
came of it is known only from its metrics (runner/compile_trace.py calls ``outcome``): a frame
Dynamo could not compile (``Unsupported: Attempted to wrap RNN, GRU, or LSTM``) runs eager, and
one in which it found no tensor operation makes no graph. Neither is a compile in the counts
this reports (``compiled``, ``train_count``), and a variant whose every attempt ended so
compiled nothing (``nothing_compiled``, with torch's reason).

A script's validation pass (runner/script/) compiles too (eval mode, no grad): ``validation``,
when set, says per compile whether it belongs to such a pass; those compiles are counted and
timed apart (``val_started``, ``val_count``, ``val_s``), never as training's.
"""

from __future__ import annotations

import time


class CompileWatch:
    def __init__(self) -> None:
        self.active = 0
        self.count = 0  # every compile started (a capture that saw one is disturbed, whoever's it was)
        self.total_s = 0.0  # failed attempts' time too: the run spent it
        self.val_started = 0  # of which in a script's validation pass
        self.val_s = 0.0
        self.empty = 0  # training's attempts that made no graph (Dynamo failed, or found no op)
        self.val_empty = 0
        self.fell_back: list[str] = []  # the frames that run eager, with torch's reason (bounded)
        self._since = 0.0
        self._in_validation = False  # the outermost compile under way is a validation pass's
        self._in_step_s = 0.0
        self._val_in_step_s = 0.0
        self.on_start = None  # optional callable(compile_id: str, backward: bool): say it at once
        self.installed = False
        # optional callable(compile_id, backward) -> a kind or None: a script's compiles outside
        # training (runner/script/validation.py)
        self.validation = None

    def install(self) -> bool:
        try:
            from torch._dynamo.callback import callback_handler
        except ImportError:
            return False
        callback_handler.register_start_callback(self._start)
        callback_handler.register_end_callback(self._end)
        self.installed = True
        return True

    def outcome(self, graph: bool, validation: bool = False, fell_back: str | None = None) -> None:
        """A frame compile's metrics (after its end callback): whether it made a graph, and if
        Dynamo could not compile it, what it said (``forward() (main.py:28): Attempted to wrap
        RNN, GRU, or LSTM``)."""
        if graph:
            return
        if validation:
            self.val_empty += 1
        else:
            self.empty += 1
        if fell_back and fell_back not in self.fell_back and len(self.fell_back) < 8:
            self.fell_back.append(fell_back)

    def nothing_compiled(self, mode: str) -> str | None:
        """The warning for a compiled variant whose training Dynamo compiled nothing for: it runs
        as eager, and a comparison with eager compares eager with eager."""
        if mode == "eager" or not self.installed or self.train_count:
            return None
        import torch

        if self.fell_back:  # it tried, and torch said why not
            return (f"nothing was compiled: Dynamo could not compile {self.fell_back[0]}; this "
                    f"{mode} variant ran eager (torch {torch.__version__})")
        if self.val_count:
            return (f"nothing was compiled for training: only its validation passes compiled "
                    f"({self.val_count}); this {mode} variant trained eager")
        if self.count:
            return (f"nothing was compiled: Dynamo found no tensor operation to compile in the "
                    f"{self.count} frame(s) it was given; this {mode} variant ran eager")
        return (f"nothing was compiled: this {mode} variant ran eager (torch {torch.__version__}; "
                "Dynamo skipped every frame it was given, or no torch.compile ran)")

    def _start(self, args=None) -> None:
        compile_id = str(getattr(args, "compile_id", ""))
        trigger = getattr(getattr(args, "callback_trigger", None), "name", "")
        backward = trigger == "LAZY_BACKWARD"
        validation = self.validation is not None and bool(self.validation(compile_id, backward))
        self.active += 1
        self.count += 1
        self.val_started += validation
        if self.on_start is not None:
            # First: a script's first compile may start its run there, and wait for its first turn
            # (the interleaved schedule): that wait is no compile's.
            self.on_start(compile_id, backward)
        if self.active == 1:
            self._since = time.perf_counter()
            self._in_validation = validation

    def _end(self, args=None) -> None:
        self.active = max(0, self.active - 1)
        if self.active == 0:
            elapsed = time.perf_counter() - self._since
            self.total_s += elapsed
            if self._in_validation:
                self.val_s += elapsed
                self._val_in_step_s += elapsed
            else:
                self._in_step_s += elapsed

    @property
    def compiled(self) -> int:
        """Compiles that made a graph (a lazy backward's included), training's and validation's."""
        return self.count - self.empty - self.val_empty

    @property
    def train_count(self) -> int:
        """Training's compiles that made a graph."""
        return self.count - self.val_started - self.empty

    @property
    def val_count(self) -> int:
        """A validation pass's compiles that made a graph."""
        return self.val_started - self.val_empty

    @property
    def train_s(self) -> float:
        return self.total_s - self.val_s

    def take_step_compile_ms(self) -> float:
        """Training's compile time that fell inside the step just finished (0.0 for a normal
        step); a validation pass's compile time is taken apart (``take_step_val_ms``)."""
        ms, self._in_step_s = self._in_step_s * 1000.0, 0.0
        return ms

    @property
    def val_in_step(self) -> bool:
        """A validation pass's compile ran in the step under way (its time not taken yet)."""
        return self._val_in_step_s > 0

    def take_step_val_ms(self) -> float:
        """A validation pass's compile time inside the step just finished."""
        ms, self._val_in_step_s = self._val_in_step_s * 1000.0, 0.0
        return ms


def listen(mode: str, emitter, validation=None):
    """A run's compile listeners: the watch (every variant: a compiled one's compiles, or an
    eager one's by mistake), and for a compiled variant torch's compile trace (graph breaks,
    recompiles: runner/compile_trace.py) and hints (runner/torch_hints.py). ``validation``: a
    script's, which tells a validation pass's compiles apart. Returns (watch, trace or None)."""
    watch = CompileWatch()
    watch.validation = validation
    watch.install()
    if mode == "eager":
        return watch, None
    from tuimon.runner.compile_trace import TraceListener
    from tuimon.runner.torch_hints import HintListener

    trace = TraceListener(emitter, watch)
    trace.validation = validation
    trace.install()
    HintListener(emitter).install()
    return watch, trace
