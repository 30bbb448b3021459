"""A variant's compile mode on a script that knows nothing of it.

The script's own ``torch.compile`` / ``Module.compile`` calls get the variant's mode (eager:
compile disabled, which torch itself does by handing the model back unchanged). A script that
never compiles still gets its compiled variants: **every module an optimizer trains** (the first
module called whose parameters include all that optimizer's: a GAN's generator and critic, a
seq2seq's encoder and decoder) is compiled in place (as ``Module.compile(mode=...)`` does) once
found, so its first forward runs eager and a later one compiles; one inside a module compiled
already is compiled with it. ``--compile-module NAME`` picks the module instead: the first one
called whose class is NAME, optimizer or not. The modules are found by a one-shot global forward
pre-hook, in every variant (each optimizer's module is the anatomy's: anatomy.py), removed once
every optimizer's module is found or the first step ends; inside a compiled frame it does
nothing. A ``MODE+opt`` variant also compiles every optimizer's step as the optimizer is made
(runner/compile_optimizer.py).

``tuimon try``'s fixes (runner/script/fixes.py) change every compile here: ``dynamic=True``, a
mode fix's mode (the ``mode`` given is already theirs), and ``regional``, which compiles the
module's repeated blocks one by one instead (runner/fixes.py; tuimon's own compile of them waits
for the module's first call to end, as its whole compile does).

When the first step ends and nothing will be compiled (no torch.optim optimizer to find the
module by, no module holding all its parameters, no module of class NAME), the run says so
once, in a note flagged ``uncompiled``: the summary then names the variant as one that compiled
nothing, never as a compiled one.
"""

from __future__ import annotations

import os

import torch

from tuimon.runner.compile_optimizer import compile_step
from tuimon.runner.fixes import repeated_note
from tuimon.runner.refs import param_ids, weak
from tuimon.variants import compiles_optimizer, model_mode

INDUCTOR = "inductor"
ASK = "pass --compile-module NAME (a module's class) or call torch.compile in the script"
SEEN = 12  # class names remembered while looking for --compile-module's


class CompileModes:
    def __init__(self, mode: str, auto: bool, say, module: str | None = None,
                 fixes=None) -> None:
        self.mode = model_mode(mode)  # the model's ('default+opt' -> 'default')
        self.named = module if self.mode != "eager" else None  # --compile-module: a class name
        self.auto = auto and self.mode != "eager" and not self.named
        self.compile_optimizer = compiles_optimizer(mode)  # MODE+opt: every optimizer's step too
        self.say = say  # one line for the run's notes: say(text, **fields)
        self.fixes = fixes  # tuimon try's (runner/fixes.py's Fixes), or None
        self.script_compiles = 0
        self.anatomy = None  # each optimizer's module and how it runs (anatomy.py), when told
        self._done: list = []  # the modules tuimon compiled, weakly (script/phases.py says why)
        self._pending: list = []  # (optimizer, its parameters' ids), its module not found yet
        self._found: list = []  # (optimizer, module), weakly: found, to compile as the hook goes
        self._closed = False  # the first step ended: no global hook from here on
        self._stepped = False  # ... and was settled (a later lead's module: at once, when found)
        self._twice: set[int] = set()  # parameters a double backward reached (never compiled)
        self._script_modules: list = []  # the modules the script compiled, weakly
        self._hook = self._named_hook = None
        self._seen: list[str] = []  # classes called while looking for the named one
        self._orig_compile = None
        self._orig_module_compile = None
        # Told of every module compiled (or, eager, handed back as it was) and of the script's
        # torch.compile calls before they run: the forward phase's timer (script/phases.py).
        self.listener = None

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
        if self.named:
            self._named_hook = torch.nn.modules.module.register_module_forward_pre_hook(self._named_call)

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
        self._undo_auto(model)
        out = self._kwargs(kwargs, "torch.compile")
        if out is None:
            return self._told(model) if model is not None else (lambda fn: fn)
        if model is None:  # @torch.compile(...): a function's decorator, not a module
            if self.fixes is not None and self.fixes.on("regional"):
                self.fixes.tell("regional", False, "the script compiles a function, not a module")
            return self._orig_compile(**out)
        compiled = self._compiled(model, out, "the module the script compiles")
        self._script_modules.append(weak(compiled))
        return self._told(compiled)

    def module_compile_call(self, module, args: tuple, kwargs: dict):
        self._undo_auto(module)
        out = self._kwargs(kwargs, "Module.compile")
        if out is not None:
            self._compiled(module, out, "the module the script compiles",
                           lambda m, **kw: self._orig_module_compile(m, *args, **kw))
            self._script_modules.append(weak(module))
        self._told(module)
        return None

    def _told(self, module):
        if self.listener is not None:
            self.listener.candidate(module)
        return module

    @property
    def auto_done(self) -> bool:
        """Whether tuimon compiled a module for the script."""
        return bool(self._done)

    @property
    def auto_compiled(self):
        """The (first) module tuimon compiled, while the script holds it; else None."""
        return next((m for m in (ref() for ref in self._done) if m is not None), None)

    def _undo_auto(self, target) -> None:
        for ref in self._done:
            if ref() is target:
                object.__setattr__(target, "_compiled_call_impl", None)  # the script's call wins
                self.say(f"the script compiles {type(target).__name__} itself: tuimon's compile undone")
                self._done.remove(ref)
                return

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
        self._look_for(optimizer)

    def _look_for(self, optimizer) -> None:
        params = param_ids(optimizer)
        if params and not self._closed:
            self._pending.append((weak(optimizer), params))
            if self._hook is None:
                self._hook = torch.nn.modules.module.register_module_forward_pre_hook(self._first_call)

    def retarget(self, optimizer) -> None:
        """A new lead optimizer (a second training, or a lead the first step named): its module
        found and compiled as the others were, unless it already was."""
        if any(ref() is optimizer for ref, *_ in self._found) or any(
                ref() is optimizer for ref, _ in self._pending):
            return
        self._closed = False
        self._look_for(optimizer)

    def double_backward(self, outputs) -> None:
        """``torch.autograd.grad(..., create_graph=True)`` from ``outputs`` (a gradient penalty):
        the parameters its graph reaches belong to a module torch.compile cannot train
        (AOTAutograd has no double backward): before the first step settles, remembered."""
        if self._stepped:
            return
        roots = outputs if isinstance(outputs, (list, tuple)) else [outputs]
        todo = [t.grad_fn for t in roots if isinstance(t, torch.Tensor) and t.grad_fn is not None]
        seen: set[int] = set()
        while todo:
            node = todo.pop()
            if node is None or id(node) in seen:
                continue
            seen.add(id(node))
            variable = getattr(node, "variable", None)  # an AccumulateGrad: a leaf, a parameter
            if variable is not None:
                self._twice.add(id(variable))
            todo.extend(fn for fn, _ in node.next_functions)

    def _first_call(self, module, args):
        if torch.compiler.is_compiling():
            return None  # traced inside a compiled frame: a no-op there, never a graph break
        own = None
        for entry in list(self._pending):
            own = own if own is not None else {id(p) for p in module.parameters()}
            if entry[1] <= own:  # else a part of the model, or another model: wait for it
                self._pending.remove(entry)
                self._found.append((entry[0], weak(module), False))
        if not self._pending:
            self._remove_hook()
            if self._stepped:  # a later lead's module: compiled now (the first step's: at its end)
                self._settle()
        return None

    def _settle(self) -> None:
        """The hook goes first, then each module found runs as the variant says: compiled here
        (its next call compiles, never with the hook inside a compiled frame) or not, and why."""
        self._remove_hook()
        for k, (opt_ref, mod_ref, settled) in enumerate(self._found):
            module = mod_ref()
            if settled or module is None:
                continue
            self._found[k] = (opt_ref, mod_ref, True)
            how, other = self._how(module, k)
            if self.anatomy is not None:
                self.anatomy.trains(opt_ref(), module, how, other)

    def _how(self, module, k: int) -> tuple[str, str | None]:
        """How ``module`` runs in this variant (compiling it where tuimon should): a code and the
        module it depends on (anatomy.py words the codes)."""
        if self.mode == "eager":
            return "variant", None
        if self.script_compiles or self.named:
            theirs = self._script_modules if self.script_compiles else self._done
            mine = any(m is module for ref in theirs if ref() is not None for m in ref().modules())
            return ("script" if self.script_compiles else "tuimon") if mine else (
                "script-other" if self.script_compiles else "named-other"), None
        if not self.auto:
            return "no-auto", None
        if self._twice & {id(p) for p in module.parameters()}:
            return "double-backward", None
        for ref in self._done:
            done = ref()
            if done is not None and any(m is module for m in done.modules()):
                return "inside", type(done).__name__
            if done is not None and any(m is done for m in module.modules()):
                return "holds", type(done).__name__
        which = "the module the optimizer trains" if not self._done else "the module another optimizer trains"
        self._compile(module, which)
        return "tuimon", None

    def _named_call(self, module, args):
        """--compile-module NAME: the first module called whose class is NAME."""
        kind = type(module)
        if self.named not in (kind.__name__, kind.__qualname__, f"{kind.__module__}.{kind.__qualname__}"):
            if len(self._seen) < SEEN and kind.__name__ not in self._seen:
                self._seen.append(kind.__name__)
            return None
        self._compile(module, f"--compile-module {self.named}")
        return None

    def _compile(self, module, which: str) -> None:
        if self._named_hook is not None:
            self._named_hook.remove()
            self._named_hook = None
        self._repeated(module)
        kwargs = {"mode": self.mode}
        if self.fixes is not None:
            kwargs = self.fixes.compile_kwargs(kwargs)

        def whole(m, **kw):
            # On this module alone (a wrapper's __setattr__ may copy it onto the module it wraps).
            object.__setattr__(m, "_compiled_call_impl", self._orig_compile(_compilable_call(m), **kw))

        if self.fixes is not None and self.fixes.on("regional"):
            def after_first_call(m, args, out):  # its blocks compiled once this eager call ends
                done.remove()
                self.fixes.compile_model(m, self._orig_compile, kwargs, f"{type(m).__name__} "
                                         f"({which})", whole)

            done = module.register_forward_hook(after_first_call, always_call=True)
        else:
            whole(module, **kwargs)
        self._done.append(weak(module))
        self._told(module)
        what = "the script never calls torch.compile: tuimon" if not self.script_compiles else "tuimon"
        off = " (--no-auto-compile turns this off)" if not self.named else ""
        verb = ("compiled" if self.fixes is None or not self.fixes.on("regional")
                else "compiles the repeated blocks of (the fix regional)")
        self.say(f"{what} {verb} {type(module).__name__} ({which}) with mode={self.mode!r} at its "
                 f"first call, which ran eager{off}")

    def asked(self) -> bool:
        """Did this variant ask torch to compile anything (the script, or tuimon for it)?"""
        return self.mode != "eager" and (self.script_compiles > 0 or self.auto_done)

    def _remove_hook(self) -> None:
        if self._hook is not None:
            self._hook.remove()
            self._hook = None

    def first_step(self, optimizers: int) -> None:
        """The first step ended: what was found is settled, the hook goes (an optimizer whose
        module was not called yet runs it eager), and a compiled variant that will compile
        nothing says why, once."""
        looking = bool(self._pending) or self._named_hook is not None
        self._closed = self._stepped = True
        self._settle()
        if self._named_hook is not None:
            self._named_hook.remove()
            self._named_hook = None
        for opt_ref, _ in self._pending:
            if self.anatomy is not None and opt_ref() is not None:
                self.anatomy.trains(opt_ref(), None, "not-found", None)
        self._pending = []
        if self.mode == "eager" or self.script_compiles or self.auto_done:
            return
        if self.named:
            seen = f" (modules called: {', '.join(self._seen)})" if self._seen else ""
            why = (f"no module of class {self.named} was called in the first step{seen}; give "
                   "--compile-module one of those, or call torch.compile in the script")
        elif not self.auto:
            why = "--no-auto-compile, and the script never calls torch.compile"
        elif optimizers == 0:
            why = f"no torch.optim optimizer, so tuimon found no module to compile; {ASK}"
        elif looking:
            why = ("no module called holds all the parameters the optimizer trains, so tuimon found "
                   f"no module to compile; {ASK}")
        else:
            return
        self.say(f"nothing was compiled — {why}", uncompiled=why)


def _compilable_call(module):
    """What ``Module.compile()`` hands ``torch.compile``, as torch 2.10 and later choose it: the
    module's ``_call_impl``, wrapped in a frame of our own when its ``forward`` is torch's
    (``nn.Sequential`` and the other built-ins). Dynamo never starts tracing in a frame of
    torch's own files, only inlines them from one it traced: torch 2.9 and older compiled the bare
    ``_call_impl`` and then skipped every frame of such a module, so nothing compiled at all."""
    call = module._call_impl
    forward = getattr(type(module).forward, "__code__", None)
    if forward is None or not forward.co_filename.startswith(TORCH_DIR):
        return call  # its forward is the user's: Dynamo picks up that frame

    def compiled_call(*args, **kwargs):
        return call(*args, **kwargs)

    # Named for the module it calls: Dynamo's compile records (the compile lines, tlparse) then
    # name "DistributedDataParallel", not this wrapper (compile_trace.py drops its location).
    name = type(module).__name__
    code = compiled_call.__code__.replace(co_name=name)
    if hasattr(code, "co_qualname"):  # Python 3.11+
        code = code.replace(co_qualname=name)
    compiled_call.__code__ = code
    return compiled_call


TORCH_DIR = os.path.dirname(os.path.abspath(torch.__file__)) + os.sep
