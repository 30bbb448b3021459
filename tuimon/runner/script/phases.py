"""A script's forward, timed from the outside: the trained module's calls. A call with gradients
off (``torch.no_grad()``, ``inference_mode``: the eval forwards a script runs inside its step for
its accuracy, a policy's action picked without a graph) trains nothing: it is the step's eval
part, not its forward (runner/phases.py). While a profiler capture records, each call is a
``module: NAME (trained)`` span too (runner/profiling/outer_spans.py): the modules outside it
are named apart.

The trained module is the one whose parameters hold all of the first optimizer's: a module the
script (or tuimon's auto-compile) compiles, told by compile_modes.py, or else the first such
module called once the optimizer exists (the model, its DDP wrapper: the outermost one is called
first), found by a one-shot global forward pre-hook as compile_modes.py finds the module it
compiles. A later training's (a new lead optimizer after the first step) is the module trained.py
looked up for it among the live modules (holder.py), with no hook. Its calls are timed by a
wrapper in the module's own ``_compiled_call_impl`` slot, which ``Module.__call__`` calls
instead of ``_call_impl`` when set (``Module.compile`` puts its compiled ``_call_impl`` there):
the wrapper runs outside every compiled frame, so Dynamo
never traces it (a forward hook on a module compiled in place would be traced, and break its
graph). When the slot changes under it (the script's ``Module.compile`` after the first call),
the next step boundary wraps what is there now; before the script's own ``torch.compile(model)``
of the wrapped module the slot is given back, and the wrapper torch.compile returns is wrapped.
Pickling and ``copy.deepcopy`` leave the slot out (torch's ``Module.__getstate__``), so a saved
or copied model carries no wrapper.

The module is held weakly, here and in the wrapper: a model the script lets go is freed when it
would be without tuimon. Held strongly, a DDP model (its process group with it) outlived the
script's ``main()`` into the interpreter's teardown, where gloo's destructor aborted the rank
(SIGABRT) now and then, failing torchrun's exit and leaving the other nodes' launchers waiting.
"""

from __future__ import annotations

import time
import weakref

import torch

from tuimon.runner.global_hooks import GlobalHook
from tuimon.runner.phases import EVAL, FORWARD, Timeline
from tuimon.runner.profiling import outer_spans
from tuimon.runner.refs import param_ids


class ForwardTimer:
    def __init__(self, timeline: Timeline, say, amp=None) -> None:
        self.timeline = timeline
        self.say = say  # one line for the run's notes
        # tuimon try's amp (runner/script/fixes.py): amp(call, module) is the call under
        # autocast, here outside every compiled frame, as a user's autocast around model(x) is
        self.amp = amp
        self._module = None  # a weak reference to the trained module, once found
        # The wrapper in the module's slot, weakly too (it holds what it calls, the module's
        # compiled call, and so the module); its ``inner``: the slot's callable it calls (a
        # compile in place), or None (the module's own _call_impl).
        self._wrapper = None
        self._params: set[int] | None = None
        self._candidates: list = []  # modules compiled before an optimizer existed (weakly)
        self._hook = None
        self._gave_up = False
        self._retargeted = False  # looking again, for a new lead optimizer's module
        self._stepped = False  # the first step ended: no global hook from here on (holder.py)
        self.looking = False  # ... and not found yet: the next boundary's check() gives up
        # The FLOP count's (script/flop_catch.py): while set, the wrapper hands it each training
        # call's arguments (the first steps only; the plain wrapper goes back once counted).
        self.catch = None
        self.no_grad = None  # told of each call with gradients off (ScriptSteps.no_grad_call)

    @property
    def module(self):
        """The trained module; None before it is found, or once the script let it go."""
        return self._module() if self._module is not None else None

    @property
    def wrapper(self):
        return self._wrapper() if self._wrapper is not None else None

    # ---- finding the trained module ---------------------------------------------------------
    def optimizer_made(self, optimizer) -> None:
        if self._params is not None:
            return  # the first optimizer's parameters name the trained module
        self._params = param_ids(optimizer)
        if not self._params:
            return
        for ref in reversed(self._candidates):  # the latest compile first
            if (module := ref()) is not None and self._holds(module):
                self._adopt(module)
                break
        else:
            if not self._stepped:  # later: trained.py's lookup, as the lead changes
                self._hook = GlobalHook(self._first_call)
        self._candidates.clear()

    def candidate(self, module) -> None:
        """compile_modes.py: ``module`` was compiled (in place, or torch.compile's wrapper; in
        the eager variant handed back as it was): the module the script will call, if it holds
        the optimizer's parameters. Known this way, no global hook is needed to find it (one
        would fire, as a no-op, inside its compiled frames)."""
        if self.module is not None or not isinstance(module, torch.nn.Module):
            return
        if self._params is None:
            self._candidates.append(weakref.ref(module))
        elif self._holds(module):
            self._adopt(module)

    def _holds(self, module) -> bool:
        return self._params <= {id(p) for p in module.parameters()}

    def _first_call(self, module, args):
        if torch.compiler.is_compiling() or self.module is not None:
            return None  # traced inside a compiled frame: a no-op there, never a graph break
        if self._holds(module):
            self._adopt(module)
        return None  # else a part of the model, or another model: wait for the trained one

    def _adopt(self, module) -> None:
        self._disarm()
        self._module = weakref.ref(module)
        self._wrap()

    def _disarm(self) -> None:
        self.looking = False
        if self._hook is not None:
            self._hook.remove()
            self._hook = None

    def give_up(self) -> None:
        """The first step ended and no module was found: say so once, stop looking (a global
        hook fires on every module call)."""
        self._stepped = True
        if self.module is not None or self._gave_up or self._params is None or self.looking:
            return  # found, said, nothing to find, or still looking for a new lead's (check())
        self._gave_up = True
        self._disarm()
        self.say("forward is not split out: no module called holds all the parameters the "
                 "optimizer trains (its time counts as other)")

    # ---- the wrapper ------------------------------------------------------------------------
    def _wrap(self) -> None:
        module = self.module
        inner = module._compiled_call_impl  # a compile in place's call; None: the module's own
        timeline, perf, grad = self.timeline, time.perf_counter, torch.is_grad_enabled
        ref, call_impl = self._module, type(module)._call_impl  # weakly, through its reference
        name = outer_spans.module_name(module)
        call = inner
        if self.amp is not None:
            call = self.amp(inner if inner is not None else
                            (lambda *args, **kwargs: call_impl(ref(), *args, **kwargs)), module)

        timer = self

        def timed_call(*args, **kwargs):
            part = FORWARD if grad() else EVAL
            if part == EVAL and timer.no_grad is not None:
                timer.no_grad()  # the step held a call outside training (steps.py)
            spans = outer_spans.active  # a capture records: the call as a span (None: the rest)
            span = spans.trained(name) if spans is not None else None
            if timeline.mark is None:  # CPU: a span (runner/phases.py)
                t0, i0 = perf(), timeline.inner
                try:
                    return call(*args, **kwargs) if call is not None else call_impl(ref(), *args, **kwargs)
                finally:
                    spent = perf() - t0
                    timeline.acc[part] += spent - (timeline.inner - i0)
                    timeline.inner = i0 + spent
                    if spans is not None:
                        spans.close(span)
            timeline.enter(part)
            try:
                return call(*args, **kwargs) if call is not None else call_impl(ref(), *args, **kwargs)
            finally:
                timeline.leave()
                if spans is not None:
                    spans.close(span)

        if self.catch is not None:
            timed_call = _catching(timed_call, self.catch, grad)
        timed_call.inner = inner
        self._wrapper = weakref.ref(timed_call)
        _slot(module, timed_call)

    def check(self, rewrap: bool = False) -> None:
        """At a step boundary after a compile (the hooks ask then, or while ``looking``): the
        slot still holds the wrapper (a compile in place replaced it: wrap the compiled call); a
        search begun by ``retarget`` a step ago that found nothing gives up. ``rewrap``: the
        wrapper made again (the FLOP count's catching one in or out)."""
        module = self.module
        if module is not None:
            wrapper = self.wrapper
            if module._compiled_call_impl is not wrapper:
                self._wrap()
            elif rewrap:
                _slot(module, wrapper.inner)
                self._wrap()
        elif self._retargeted and self._hook is not None:
            self.give_up()

    def retarget(self, optimizer, found=None) -> None:
        """A new lead optimizer, the first one let go (a second training in the script): the
        module it trains is timed from now on, found as the first one was before the first step
        ended, and after it: ``found``, trained.py's module for it (None: none holds them all)."""
        params = param_ids(optimizer)
        module = self.module
        if module is not None and params <= {id(p) for p in module.parameters()}:
            return  # the same model, a new optimizer
        if module is None and params == self._params and not self._stepped:
            return  # still looking for this one's
        if module is not None and module._compiled_call_impl is (wrapper := self.wrapper):
            _slot(module, wrapper.inner)  # a model kept, no longer trained
        self._disarm()
        self._module = self._wrapper = None
        self._params, self._gave_up, self._retargeted = None, False, True
        if self._stepped:  # no global hook now: found already, or not split out
            self._params, self._candidates = params, []
            if found is not None:
                self._adopt(found)
            else:
                self.give_up()
            return
        self.optimizer_made(optimizer)
        self.looking = self._hook is not None

    def release(self, model) -> None:
        """The script is about to torch.compile ``model``: if it is the wrapped module, give its
        slot back first (Dynamo would trace the wrapper); what torch.compile returns is the next
        candidate."""
        if model is None or model is not self.module:
            return
        if model._compiled_call_impl is (wrapper := self.wrapper):
            _slot(model, wrapper.inner)
        self._module = self._wrapper = None


def _catching(timed_call, catch, grad):
    def catching_call(*args, **kwargs):
        if not grad():
            return timed_call(*args, **kwargs)
        kind = catch.seen(args, kwargs)  # a training call: its arguments, for the FLOP count
        out = timed_call(*args, **kwargs)
        catch.output(kind, out)  # ... and whether a backward reaches it
        return out

    return catching_call


def _slot(module, call) -> None:
    """Put ``call`` in this module's ``_compiled_call_impl`` slot, on it alone. A wrapper module
    may forward attribute sets to the module it wraps: Lightning Fabric's ``_FabricModule`` copies
    the slot onto the user's model, whose call then ran the wrapper's timed call again, forever
    (a RecursionError at the first forward, only under tuimon)."""
    object.__setattr__(module, "_compiled_call_impl", call)
