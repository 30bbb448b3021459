"""A variant's compile mode on a script that knows nothing of it: the script's own
``torch.compile`` / ``Module.compile`` calls get the variant's mode (eager: compile disabled,
which torch itself does by handing the model back unchanged). A script that never compiles still
gets its compiled variants: tuimon compiles every module an optimizer trains (trained.py). A
``MODE+opt`` variant also compiles every optimizer's step as the optimizer is made
(runner/compile_optimizer.py).

``tuimon try``'s fixes (runner/script/fixes.py) change every compile here and there:
``dynamic=True``, a mode fix's mode (the ``mode`` given is already theirs), and ``regional``,
which compiles the module's repeated blocks one by one instead (runner/fixes.py).
"""

from __future__ import annotations

import torch

from tuimon.runner.compile_optimizer import compile_step
from tuimon.runner.fixes import repeated_note
from tuimon.runner.refs import weak
from tuimon.runner.script.trained import TrainedModules
from tuimon.variants import compiles_optimizer, model_mode

INDUCTOR = "inductor"


class CompileModes:
    def __init__(self, mode: str, auto: bool, say, module: str | None = None,
                 fixes=None, anatomy=None) -> None:
        self.mode = model_mode(mode)  # the model's ('default+opt' -> 'default')
        self.compile_optimizer = compiles_optimizer(mode)  # MODE+opt: every optimizer's step too
        self.say = say  # one line for the run's notes: say(text, **fields)
        self.fixes = fixes  # tuimon try's (runner/fixes.py's Fixes), or None
        self.script_compiles = 0
        self.script_modules: list = []  # the modules the script compiled, weakly
        # ... and those it asked to compile in any variant (eager's too: handed back as they
        # were): its per-block compiles are read from these (trained.py's blocks_of)
        self.script_asked: list = []
        self._orig_compile = None
        self._orig_module_compile = None
        # Told of every module compiled (or, eager, handed back as it was) and of the script's
        # torch.compile calls before they run: the forward phase's timer (script/phases.py).
        self.listener = None
        # Each optimizer's module, found and compiled for a script that compiles none (trained.py)
        self.trained = TrainedModules(self, auto, module, anatomy)

    def install(self) -> None:
        self._orig_compile = torch.compile
        self._orig_module_compile = torch.nn.Module.compile
        modes = self

        def compile(model=None, **kwargs):  # noqa: A001 - torch.compile's stand-in
            return modes.compile_call(model, kwargs)

        def module_compile(module, *args, **kwargs):
            return modes.module_compile_call(module, args, kwargs)

        compile.__doc__ = self._orig_compile.__doc__
        torch.compile = compile
        torch.nn.Module.compile = module_compile
        self.trained.install()

    # ---- the script's own calls -------------------------------------------------------------
    def _kwargs(self, kwargs: dict, what: str) -> dict | None:
        """The script's compile arguments with the variant's mode, or None for eager."""
        self.script_compiles += 1
        if self.mode == "eager":
            self.say(f"the script's {what} is disabled in the eager variant")
            return None
        backend = kwargs.get("backend", INDUCTOR)
        if backend != INDUCTOR:
            self.say(f"the script's {what} uses backend={backend!r}: its mode is left as it is")
            return kwargs
        asked = kwargs.get("mode")
        out = dict(kwargs, mode=self.mode)
        if out.pop("options", None) is not None:
            self.say(f"the script's {what} options= were dropped for mode={self.mode}")
        if asked != self.mode:
            self.say(f"the script's {what}(mode={asked!r}) runs with mode={self.mode!r} here")
        return self.fixes.compile_kwargs(out) if self.fixes is not None else out

    def _compiled(self, model, kwargs: dict, what: str, whole=None):
        """``model`` compiled with ``kwargs``: whole, or its blocks (the fix regional)."""
        self._repeated(model)
        if self.fixes is None:
            return (whole or self._orig_compile)(model, **kwargs)
        return self.fixes.compile_model(model, self._orig_compile, kwargs, what, whole)

    def _repeated(self, model) -> None:
        """A module compiled: its repeated block said (tuimon try's regional needs one)."""
        if isinstance(model, torch.nn.Module):
            text, fact = repeated_note(model)
            self.say(text, repeated=fact)

    def compile_call(self, model, kwargs: dict):
        if self.listener is not None:
            self.listener.release(model)
        self.trained.undo(model)
        if isinstance(model, torch.nn.Module):
            self.script_asked.append(weak(model))
        out = self._kwargs(kwargs, "torch.compile")
        if out is None:
            return self._told(model) if model is not None else (lambda fn: fn)
        if model is None:  # @torch.compile(...): a function's decorator, not a module
            if self.fixes is not None and self.fixes.on("regional"):
                self.fixes.tell("regional", False, "the script compiles a function, not a module")
            return self._orig_compile(**out)
        compiled = self._compiled(model, out, "the module the script compiles")
        if isinstance(compiled, torch.nn.Module):  # a function it compiles trains no module
            self.script_modules.append(weak(compiled))
        return self._told(compiled)

    def module_compile_call(self, module, args: tuple, kwargs: dict):
        self.trained.undo(module)
        self.script_asked.append(weak(module))
        out = self._kwargs(kwargs, "Module.compile")
        if out is not None:
            self._compiled(module, out, "the module the script compiles",
                           lambda m, **kw: self._orig_module_compile(m, *args, **kw))
            self.script_modules.append(weak(module))
        self._told(module)
        return None

    def _told(self, module):
        if self.listener is not None:
            self.listener.candidate(module)
        return module

    # ---- compiling a script that never does ---------------------------------------------------
    def optimizer_made(self, optimizer) -> None:
        if self.compile_optimizer:
            name = type(optimizer).__name__
            done = compile_step(torch, optimizer, self._orig_compile)  # not the script's call
            self.say(f"tuimon compiles the optimizer's step too ({name}, mode default)" if done
                     else f"the optimizer's step is left eager: {name} defines its own step")
            if self.fixes is not None and self.fixes.on("opt"):
                self.fixes.tell("opt", done, f"{name}'s step compiled too, as a MODE+opt "
                                "variant's" if done else f"{name} defines its own step: left eager")
        self.trained.made(optimizer)

    def asked(self) -> bool:
        """Did this variant ask torch to compile anything (the script, or tuimon for it)?"""
        return self.mode != "eager" and (self.script_compiles > 0 or self.trained.done)
