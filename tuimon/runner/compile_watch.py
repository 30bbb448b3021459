"""Notices when torch.compile is compiling, so steps that include a compile are kept apart.

Uses Dynamo's start/end callbacks (fired for each frame compile and each lazy backward
compile, never on a cache lookup), so steady-state steps pay nothing.

A script's validation pass (runner/script/) compiles too (eval mode, no grad): ``validation``,
when set, says per compile whether it belongs to such a pass; those compiles are counted and
timed apart (``val_count``, ``val_s``), never as training's.
"""

from __future__ import annotations

import time


class CompileWatch:
    def __init__(self) -> None:
        self.active = 0
        self.count = 0  # every compile (a capture that saw one is disturbed, whoever's it was)
        self.total_s = 0.0
        self.val_count = 0  # of which in a script's validation pass
        self.val_s = 0.0
        self._since = 0.0
        self._in_validation = False  # the outermost compile under way is a validation pass's
        self._in_step_s = 0.0
        self._val_in_step_s = 0.0
        self.on_start = None  # optional callable(compile_id: str, backward: bool): say it at once
        self.installed = False
        self.validation = None  # optional callable(compile_id: str) -> bool (a script's runs)

    def install(self) -> bool:
        try:
            from torch._dynamo.callback import callback_handler
        except ImportError:
            return False
        callback_handler.register_start_callback(self._start)
        callback_handler.register_end_callback(self._end)
        self.installed = True
        return True

    def nothing_compiled(self, mode: str) -> str | None:
        """The warning for a compiled variant in which Dynamo has compiled nothing: it runs as
        eager, and a comparison with eager compares eager with eager."""
        if mode == "eager" or self.count or not self.installed:
            return None
        import torch

        return (f"nothing was compiled: this {mode} variant ran eager (torch {torch.__version__}; "
                "Dynamo skipped every frame it was given, or no torch.compile ran)")

    def _start(self, args=None) -> None:
        compile_id = str(getattr(args, "compile_id", ""))
        validation = self.validation is not None and self.validation(compile_id)
        if self.active == 0:
            self._since = time.perf_counter()
            self._in_validation = validation
        self.active += 1
        self.count += 1
        self.val_count += validation
        if self.on_start is not None:
            trigger = getattr(getattr(args, "callback_trigger", None), "name", "")
            self.on_start(compile_id, trigger == "LAZY_BACKWARD")

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
    def train_count(self) -> int:
        return self.count - self.val_count

    @property
    def train_s(self) -> float:
        return self.total_s - self.val_s

    def take_step_compile_ms(self) -> float:
        """Training's compile time that fell inside the step just finished (0.0 for a normal
        step); a validation pass's compile time is taken apart (``take_step_val_ms``)."""
        ms, self._in_step_s = self._in_step_s * 1000.0, 0.0
        return ms

    def take_step_val_ms(self) -> float:
        """A validation pass's compile time inside the step just finished."""
        ms, self._val_in_step_s = self._val_in_step_s * 1000.0, 0.0
        return ms
