"""Which module each optimizer trains, and tuimon's compile of it for a script that compiles none.

Every optimizer's module is the first module called whose parameters include all the
optimizer's (the outermost one: a DDP or torch.compile wrapper is called first). When no module
called holds them all (an RL agent used through its methods calls its actor and critic; one
optimizer over two generators), its parts are: the outermost modules called whose parameters are
all the optimizer's. They are found by one global forward pre-hook, in every variant (each
optimizer's module is the anatomy's: anatomy.py), removed once every optimizer's module is found
or the first step ends; inside a compiled frame it does nothing. A later training's module (a
new lead optimizer after the first step) is looked up among the live modules instead, as the
lead changes (holder.py: a global hook then would recompile the modules compiled already), and
compiled at once; its parts are not looked for.

In a compiled variant of a script that never calls ``torch.compile``, tuimon compiles each such
module in place (as ``Module.compile(mode=...)`` does) as the first step ends, so its later calls
compile, never with the hook inside a compiled frame. It leaves eager, and says why (the
anatomy's codes), a module inside one compiled already (compiled with it), one holding one
compiled already, and one a double backward reaches (``torch.autograd.grad(create_graph=True)``,
a gradient penalty: AOTAutograd cannot differentiate it twice). ``--compile-module NAME`` picks
the module instead: the first one called whose class is NAME, optimizer or not, compiled as the
first step ends unless a double backward reaches it.

When the first step ends and nothing will be compiled (no torch.optim optimizer to find the
module by, no module holding its parameters, no module of class NAME), the run says so once, in
a note flagged ``uncompiled``: the summary then names the variant as one that compiled nothing,
never as a compiled one. A module left eager for a double backward gets no such note: the
anatomy's ``double-backward`` tells the summary that no compile of it can work.
"""

from __future__ import annotations

import os

import torch

from tuimon.runner.fixes import compile_regions
from tuimon.runner.global_hooks import GlobalHook
from tuimon.runner.refs import param_ids, weak
from tuimon.runner.script.anatomy import own_class, sharded
from tuimon.runner.script.holder import holder

ASK = "pass --compile-module NAME (a module's class) or call torch.compile in the script"
SEEN = 12  # class names remembered while looking for --compile-module's


class TrainedModules:
    def __init__(self, modes, auto: bool, named: str | None, anatomy=None) -> None:
        self.modes = modes  # compile_modes.py's: the variant's mode, the script's compiles
        self.named = named if modes.mode != "eager" else None  # --compile-module: a class name
        self.auto = auto and modes.mode != "eager" and not self.named
        self.anatomy = anatomy  # each optimizer's module and how it runs (anatomy.py)
        self._done: list = []  # the modules tuimon compiled, weakly (script/phases.py says why)
        # [optimizer, its parameters' ids, its parts found, the ids of the modules they hold]
        self._pending: list[list] = []
        self._found: list[list] = []  # [optimizer, [module, ...], settled], weakly
        self._closed = False  # the first step ended: no global hook from here on
        self._stepped = False  # ... and was settled (a later lead's module: found at once)
        self._twice: set[int] = set()  # parameters a double backward reached (never compiled)
        self._again = False  # a new training's optimizer made: its double backward seen again
        self._hook = self._named_hook = None
        self._seen: list[str] = []  # classes called while looking for the named one
        self._named = None  # --compile-module's module, found at its first call (weakly)
        self._refused = False  # a module left eager for a double backward: no compile can work

    def install(self) -> None:
        if self.named:
            self._named_hook = GlobalHook(self._named_call)

    @property
    def done(self) -> bool:
        """Whether tuimon compiled a module for the script."""
        return bool(self._done)

    @property
    def auto_compiled(self):
        """The (first) module tuimon compiled, while the script holds it; else None."""
        return next((m for m in (ref() for ref in self._done) if m is not None), None)

    def undo(self, target) -> None:
        """The script compiles ``target`` itself: tuimon's compile of it, undone (its call wins)."""
        for ref in self._done:
            if ref() is target:
                object.__setattr__(target, "_compiled_call_impl", None)
                self.modes.say(f"the script compiles {type(target).__name__} itself: tuimon's "
                               "compile undone")
                self._done.remove(ref)
                return

    # ---- finding each optimizer's module ------------------------------------------------------
    def made(self, optimizer) -> None:
        params = param_ids(optimizer)
        if self._closed:  # no global hook during training (holder.py says why)
            if self.anatomy is not None:
                self.anatomy.trains(optimizer, [], "late")
            self._again = True  # a new training's: its first step's double backward is seen
            self._twice = set()  # (the first training's are settled; their ids may be reused)
            return
        if params:
            self._pending.append([weak(optimizer), params, [], set()])
            if self._hook is None:
                self._hook = GlobalHook(self._call)

    def retarget(self, optimizer) -> None:
        """A new lead optimizer (a second training, or the first step's lead): its module found
        and compiled as the others were, unless it already was. After the first step it is
        looked up among the live modules (holder.py), never by a global hook."""
        if any(entry[0]() is optimizer for entry in (*self._found, *self._pending)):
            return
        if not self._stepped:
            self._closed = False
            self.made(optimizer)
            return
        known = [ref() for ref in (*reversed(self.modes.script_modules), *reversed(self._done))]
        module = holder(param_ids(optimizer), known)
        self._found.append([weak(optimizer), [weak(module)] if module is not None else [], False])
        self._again = False
        if module is None:
            if self.anatomy is not None:
                self.anatomy.trains(optimizer, [], "not-found")
            return
        self._settle()

    def module_of(self, optimizer):
        """The one module found holding all of ``optimizer``'s parameters, or None."""
        for entry in self._found:
            if entry[0]() is optimizer and len(entry[1]) == 1:
                return entry[1][0]()
        return None

    def double_backward(self, outputs) -> None:
        """``torch.autograd.grad(..., create_graph=True)`` from ``outputs``: the parameters its
        graph reaches (remembered until the first step settles) are a module torch.compile
        cannot train."""
        if self._stepped and not self._again:
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

    def _call(self, module, args):
        if torch.compiler.is_compiling():
            return None  # traced inside a compiled frame: a no-op there, never a graph break
        own = None
        for entry in list(self._pending):
            own = own if own is not None else {id(p) for p in module.parameters()}
            if entry[1] <= own:
                self._pending.remove(entry)
                self._found.append([entry[0], [weak(module)], False])
            elif own and own <= entry[1] and id(module) not in entry[3]:
                entry[2].append(weak(module))  # a part of it: its submodules are in it already
                entry[3].update(id(m) for m in module.modules())
        if not self._pending:
            self._remove_hook()
        return None

    def first_step(self, optimizers: int) -> None:
        """The first step ended: an optimizer with no module found takes the parts it called; what
        was found is settled and the hook goes; a compiled variant that will compile nothing says
        why, once."""
        looking = bool(self._pending) or self._named_hook is not None
        self._closed = self._stepped = True
        for entry in self._pending:
            if entry[2]:
                self._found.append([entry[0], entry[2], False])
            elif self.anatomy is not None and entry[0]() is not None:
                self.anatomy.trains(entry[0](), [], "not-found")
        looking = looking and not any(entry[2] for entry in self._pending)
        self._pending = []
        self._compile_named()
        self._settle()
        if self._named_hook is not None:
            self._named_hook.remove()
            self._named_hook = None
        if self.modes.mode == "eager" or self.modes.script_compiles or self._done:
            return
        self._uncompiled(optimizers, looking)

    def _settle(self) -> None:
        """The hook goes first, then each module found runs as the variant says: compiled here
        (its next call compiles) or not, and why."""
        self._remove_hook()
        for entry in self._found:
            modules = [m for m in (ref() for ref in entry[1]) if m is not None]
            if entry[2] or not modules:
                continue
            entry[2] = True
            hows = [self._how(module) for module in modules]  # (code, beside, blocks) each
            if self.anatomy is not None:
                self.anatomy.trains(entry[0](), modules, *hows[0])

    def _how(self, module) -> tuple[str, str | None, dict | None]:
        """How ``module`` runs in this variant (compiling it where tuimon should): a code, the
        module it depends on and the blocks compiled one by one inside it (anatomy.py keeps them,
        report/ words them)."""
        modes = self.modes
        asked = blocks_of(module, modes.script_asked)  # the script's per-block compiles
        if modes.mode == "eager":
            return "variant", None, _fact(asked)  # theirs turned off (compile_modes.py)
        if modes.script_compiles or self.named:
            theirs = modes.script_modules if modes.script_compiles else self._done
            mine = any(m is module for ref in theirs if ref() is not None for m in ref().modules())
            if not mine and self.named and self._twice & {id(p) for p in module.parameters()}:
                return "double-backward", None, None  # --compile-module's was refused (_compile_named)
            if not mine and asked and modes.script_compiles:
                return "script-blocks", None, _fact(asked)
            return ("script" if modes.script_compiles else "tuimon") if mine else (
                "script-other" if modes.script_compiles else "named-other"), None, None
        if not self.auto:
            return "no-auto", None, None
        if self._twice & {id(p) for p in module.parameters()}:
            self._refused = True
            return "double-backward", None, None
        if any(ref() is module for ref in self._done):
            return "tuimon", None, None  # the same model, a new optimizer: compiled already
        for ref in self._done:
            done = ref()
            if done is not None and any(m is module for m in done.modules()):
                return "inside", type(done).__name__, None
            if done is not None and any(m is done for m in module.modules()):
                return "holds", type(done).__name__, None
        shards = fsdp_blocks(module)
        if shards:  # a fully_shard-ed model: per block, as torchtitan compiles one
            self._compile_blocks(module, shards)
            return "tuimon-blocks", None, _fact(shards)
        self._compile(module, "the module an optimizer trains")
        return "tuimon", None, None

    def parts(self, optimizer) -> list:
        """The modules ``optimizer`` trains when no one module holds its parameters (its parts,
        found in the first step), else []."""
        for entry in self._found:
            if entry[0]() is optimizer and len(entry[1]) > 1:
                return [m for m in (ref() for ref in entry[1]) if m is not None]
        return []

    def _named_call(self, module, args):
        """--compile-module NAME: the first module called whose class is NAME, compiled as the
        first step ends (_compile_named)."""
        if torch.compiler.is_compiling():
            return None  # traced inside a compiled frame: a no-op there, never a graph break
        kind = type(module)
        if self.named not in (kind.__name__, kind.__qualname__, f"{kind.__module__}.{kind.__qualname__}"):
            if len(self._seen) < SEEN and kind.__name__ not in self._seen:
                self._seen.append(kind.__name__)
            return None
        self._named = weak(module)
        self._named_hook.remove()
        self._named_hook = None
        return None

    def _compile_named(self) -> None:
        """--compile-module's module, compiled once the first step has shown whether a double
        backward reaches it: compiled at its first call, a PINN's next call in the same step ran
        compiled, and its ``torch.autograd.grad(create_graph=True)`` failed there."""
        module = self._named() if self._named is not None else None
        if module is None:
            return
        if self._twice & {id(p) for p in module.parameters()}:
            self._refused = True
            self.modes.say(f"--compile-module {self.named}: {type(module).__name__} left eager: a "
                           "double backward (torch.autograd.grad with create_graph) reaches it, "
                           "which torch.compile does not support")
            return
        self._compile(module, f"--compile-module {self.named}")

    # ---- tuimon's compile --------------------------------------------------------------------
    def _compile(self, module, which: str) -> None:
        if self._named_hook is not None:
            self._named_hook.remove()
            self._named_hook = None
        modes, fixes = self.modes, self.modes.fixes
        modes._repeated(module)
        kwargs = {"mode": modes.mode}
        if fixes is not None:
            kwargs = fixes.compile_kwargs(kwargs)

        def whole(m, **kw):
            # On this module alone (a wrapper's __setattr__ may copy it onto the module it wraps).
            object.__setattr__(m, "_compiled_call_impl", modes._orig_compile(_compilable_call(m), **kw))

        if fixes is not None and fixes.on("regional"):
            def after_first_call(m, args, out):  # its blocks compiled once this eager call ends
                done.remove()
                fixes.compile_model(m, modes._orig_compile, kwargs, f"{type(m).__name__} ({which})", whole)

            done = module.register_forward_hook(after_first_call, always_call=True)
        else:
            whole(module, **kwargs)
        self._done.append(weak(module))
        modes._told(module)
        what = "the script never calls torch.compile: tuimon" if not modes.script_compiles else "tuimon"
        off = " (--no-auto-compile turns this off)" if not self.named else ""
        verb = ("compiled" if fixes is None or not fixes.on("regional")
                else "compiles the repeated blocks of (the fix regional)")
        modes.say(f"{what} {verb} {type(module).__name__} ({which}) with mode={modes.mode!r} at "
                  f"its first call, which ran eager{off}")

    def _compile_blocks(self, module, blocks: list) -> None:
        """A fully_shard-ed model's blocks compiled one by one, in place (their next call
        compiles; one compile serves every block of a class): the FSDP hooks around each block
        stay outside its graph, as when a script compiles its blocks itself (torchtitan)."""
        modes, fixes = self.modes, self.modes.fixes
        kwargs = {"mode": modes.mode}
        if fixes is not None:
            kwargs = fixes.compile_kwargs(kwargs)
        compile_regions(blocks, modes._orig_compile, kwargs)
        self._done.append(weak(module))
        modes._told(module)
        fact = _fact(blocks)
        modes.say(f"the script never calls torch.compile: tuimon compiled {own_class(module)} "
                  f"per block ({fact['count']} × {fact['class']}, each one fully_shard made an FSDP "
                  f"unit) with mode={modes.mode!r}, as torchtitan does; their first calls ran "
                  "eager (--no-auto-compile turns this off)")

    def _remove_hook(self) -> None:
        if self._hook is not None:
            self._hook.remove()
            self._hook = None

    def _uncompiled(self, optimizers: int, looking: bool) -> None:
        """A compiled variant that will compile nothing: why, once (a note flagged uncompiled);
        not for a module left eager for a double backward (the anatomy says so: the summary
        words it, analysis/stats/compiles.py)."""
        if self._refused:
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
            why = ("no module called holds any of the parameters the optimizer trains, so tuimon "
                   f"found no module to compile; {ASK}")
        else:
            return
        self.modes.say(f"nothing was compiled — {why}", uncompiled=why)


def blocks_of(module, refs: list) -> list:
    """The modules of ``refs`` (weak) strictly inside ``module``: the blocks the script compiles
    one by one inside the module an optimizer trains."""
    inside = {id(m) for m in module.modules()} - {id(module)}
    found = [m for m in (ref() for ref in refs) if m is not None and id(m) in inside]
    return list({id(m): m for m in found}.values())


def fsdp_blocks(module) -> list:
    """A fully_shard-ed model's outermost FSDP units below its root (its blocks, as
    ``fully_shard(block)`` made each one), or [] when it is not one."""
    found: list[tuple[str, object]] = []
    for name, m in module.named_modules():
        if name and sharded(m) and not any(name.startswith(prefix + ".") for prefix, _ in found):
            found.append((name, m))
    return [m for _, m in found]


def _fact(blocks: list) -> dict | None:
    """{"class": the blocks' own class (the most common), "count": how many}, or None."""
    if not blocks:
        return None
    names = [own_class(b) for b in blocks]
    return {"class": max(set(names), key=names.count), "count": len(blocks)}


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
