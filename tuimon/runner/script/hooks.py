"""Where tuimon listens in a script: torch's global optimizer-step hooks (before and after),
``torch.autograd.backward`` (every ``loss.backward()`` goes through it), GradScaler's ``scale``
and ``step``, the DataLoader iterator's ``__next__``, ``Module.train`` and ``Optimizer.__init__``,
the trained module's calls (script/phases.py); plus the process's exit (atexit), uncaught
exceptions (sys.excepthook), SIGINT and fork. Each hook is a few attribute reads and a call into
``ScriptSteps`` or its ``Timeline`` (where the step's parts begin and end: data, forward,
backward, optimizer); none of them syncs with the GPU.

``start(config)`` is called by the sitecustomize in ``boot/`` before the script runs.
"""

from __future__ import annotations

import atexit
import contextlib
import faulthandler
import os
import signal
import sys
import threading
import time
import traceback
from dataclasses import replace


def start(config: str) -> None:
    """``config``: the run's settings as the supervisor wrote them (tuimon/settings.py)."""
    from tuimon.runner.torch_env import absolute, absolute_paths
    from tuimon.settings import RunSettings

    absolute_paths()  # before the script can change directory, and before torch reads them
    s = RunSettings.from_json(config)
    s = replace(s, profile=replace(s.profile, profile_dir=absolute(s.profile.profile_dir)))
    ident = None
    if s.program.is_job and s.process.role is None:
        _agent(s)  # torchrun's own process (or accelerate's, running it): its workers are the ranks
        return
    if s.program.launcher == "accelerate" and s.process.role is None:
        _launcher(s)  # accelerate launch's own process: the script is its child
        return
    if s.process.role == "rank":
        from tuimon.runner.link import identity

        ident = identity()
        if ident is None:
            return  # a helper process of torchrun's interpreter, not one of its workers
    said_on = {"fd": s.process.event_fd}  # where a failure is said (a rank: its socket, once open)
    try:
        _install(s, ident, said_on)
    except Exception as exc:  # noqa: BLE001 - tuimon's fault, not the script's: say it, stop
        from tuimon import events
        from tuimon.runner.torch_env import TorchTooOld

        said = (str(exc) if isinstance(exc, TorchTooOld)
                else f"tuimon could not hook this script ({sys.executable}): {type(exc).__name__}: {exc}")
        line = events.encode(events.make(
            events.FAILED, s.run, stage="build", error="HookError", message=said,
            traceback=traceback.format_exc()[-4000:]))
        if said_on["fd"] is not None:
            os.write(said_on["fd"], line.encode())
        print(f"tuimon: {said}", file=sys.stderr)
        os._exit(2)


def _agent(s) -> None:
    """In torchrun's elastic agent (torchrun's process, or accelerate launch's, which runs torch's
    launcher in itself for several processes, its settings for the ranks in the environment it
    hands them): hand the settings on to the workers it starts (through the environment they
    inherit, marked as ranks; never the agent's pipes, which they do not inherit) and stop with
    the supervisor. No torch here: the agent only launches."""
    from tuimon.runner.orphan import watch_parent

    ranks = replace(s, process=replace(s.process, event_fd=None, control_fd=None, role="rank",
                                       agent_pid=os.getpid()))
    os.environ.update(ranks.environ())
    watch_parent()  # SIGINT, as a stop: torchrun then ends its workers with it


def _launcher(s) -> None:
    """In ``accelerate launch``'s own process, which starts the script as its one child with
    ``subprocess.Popen`` (closing every other fd; tuimon/accelerate_launch.py): hand the
    settings on, marked as launched, and keep the run's two pipes open across that Popen, so
    the child is the run. Nothing is measured here, and no torch is imported by tuimon."""
    import subprocess

    child = replace(s, process=replace(s.process, role="launched"))
    os.environ.update(child.environ())
    fds = tuple(fd for fd in (s.process.event_fd, s.process.control_fd) if fd is not None)
    start = subprocess.Popen.__init__

    def with_pipes(self, *args, **kwargs):
        if "TORCHELASTIC_RUN_ID" in (kwargs.get("env") or {}):
            _unplanned_ranks(s)  # torch's launcher starting a worker: no child is the run
        kwargs["pass_fds"] = tuple({*kwargs.get("pass_fds", ()), *fds})
        start(self, *args, **kwargs)

    subprocess.Popen.__init__ = with_pipes


# accelerate makes a launch without --multi_gpu and without a config a multi-GPU one when it
# sees several GPUs, which tuimon (no torch on its side) read as one process.
UNPLANNED_RANKS = ("accelerate launch started several processes (it found several GPUs and no "
                   "config): give it --multi_gpu --num_processes N, and tuimon takes them as ranks")


def _unplanned_ranks(s) -> None:
    """Said as the run's failure in one line before the first worker starts; accelerate's
    process ends there (exit 2), so no rank runs unhooked or on the run's own pipes."""
    from tuimon import events

    line = events.encode(events.make(events.FAILED, s.run, stage="build", error="UsageError",
                                     message=UNPLANNED_RANKS))
    if s.process.event_fd is not None:
        os.write(s.process.event_fd, line.encode())
    print(f"tuimon: {UNPLANNED_RANKS}", file=sys.stderr, flush=True)
    os._exit(2)


def _install(s, ident: dict | None, said_on: dict) -> None:
    """Every hook, for the run ``s`` (its settings); ``ident``: a rank's place in its job."""
    import torch

    from tuimon.runner.torch_env import check_version

    newer = check_version(torch)  # TorchTooOld: one line (start), before anything is hooked
    from tuimon import events
    from tuimon.runner.compile_watch import listen
    from tuimon.runner.link import open_link
    from tuimon.runner.script import fixes as script_fixes
    from tuimon.runner.script.compile_modes import CompileModes
    from tuimon.runner.script.phases import ForwardTimer
    from tuimon.runner.script.steps import ScriptSteps
    from tuimon.runner.script.validation import Validating

    emitter, control, sock = open_link(s, ident)
    said_on["fd"] = emitter.fd
    if s.hooks.files:  # the run's own directory: its writes kept apart (files.py)
        from tuimon.runner.script.files import FilesApart

        FilesApart(s.hooks.files, lambda path, existed: emitter.emit(
            events.FILE_WRITTEN, path=path, existed=existed)).install(torch)
    if signal.getsignal(signal.SIGUSR1) is signal.SIG_DFL:  # `dump`: the stacks into the log
        faulthandler.register(signal.SIGUSR1, all_threads=True)
    validating = Validating()  # a validation pass's compiles: counted apart
    watch, trace = listen(s.mode, emitter, validating.compile)
    run = ScriptSteps(s, emitter, control, watch, ident, validating)
    run.engine.trace = trace
    watch.on_start = run.compiling
    emitter.emit_now(events.PHASE, phase="building")
    if newer:
        emitter.emit(events.WARNING, text=newer, note=True)
    _seed(s.seed, torch)
    run.fixes = fx = script_fixes.start(s, run.note)  # tuimon try's: flags, defaults, now
    modes = CompileModes(fx.mode, s.hooks.auto_compile, run.note, s.hooks.compile_module, fx,
                         run.anatomy)
    modes.install()
    run.modes = modes
    warm = None
    if s.mode != "eager":  # compile artifacts: loaded before the script's first compile
        from tuimon.runner.warm_start import WarmStart

        warm = WarmStart(emitter)
        warm.load(torch)
    # The step's parts (runner/phases.py): each hook below says where one begins and ends.
    forward = modes.listener = run.forward = ForwardTimer(run.timeline, run.note, script_fixes.amp(fx))
    forward.no_grad = run.no_grad_call
    run.make_profiler = lambda: _profiler(s, run)
    _hook_optimizers(torch, run, modes, forward, bare=s.mode == "eager")
    _hook_backward(torch, run)
    _hook_batches(run)
    _hook_train(torch, run)
    _hook_process(s, run, warm, (emitter, control, sock, (s.process.event_fd, s.process.control_fd)
                                 if sock is None else (sock.fileno(), None)))


def _hook_optimizers(torch, run, modes, forward, bare: bool) -> None:
    """Optimizers: made (auto-compile, counting) and stepped (the step boundary)."""
    import torch.optim.optimizer as optim

    from tuimon.runner.phases import OPTIMIZER
    from tuimon.runner.profiling import outer_spans

    timeline, watch = run.timeline, run.watch
    original_init = torch.optim.Optimizer.__init__

    def optimizer_init(self, *args, **kwargs):
        original_init(self, *args, **kwargs)
        if run.enabled:
            run.leader.made()
            run.anatomy.made(self)
            modes.optimizer_made(self)
            forward.optimizer_made(self)

    torch.optim.Optimizer.__init__ = optimizer_init

    def first_step() -> None:
        modes.trained.first_step(run.leader.optimizers)  # each optimizer's module: compiled, or why not
        forward.give_up()  # no trained module found to time: said once
        if forward.module is None and run.leader.lead is not None:  # a model used through its parts
            from tuimon.runner.script import part_calls

            for part in modes.trained.parts(run.leader.lead):
                part_calls.watch(part, run.no_grad_call)
        if run.engine.profiler is not None:  # module spans need the model: known by now, if ever
            run.engine.profiler.model = modes.trained.auto_compiled

    run.first_step = first_step

    def lead_changed(optimizer) -> None:  # the first lead, or a second training's: its model
        run.anatomy.lead_changed(optimizer, run.i)  # found (and compiled)
        modes.trained.retarget(optimizer)
        forward.retarget(optimizer, modes.trained.module_of(optimizer))

    run.leader.changed = lead_changed
    stepping_now: list = []  # the optimizer steps under way (one inside another: a wrapper's)
    compiles = [watch.count]  # the compile count forward.check() last saw
    perf = time.perf_counter

    def stepping(optimizer, args, kwargs) -> None:
        run.stepping(optimizer)
        if timeline.mark is None:
            stepping_now.append((perf(), timeline.inner))
        else:
            timeline.enter(OPTIMIZER)
        if outer_spans.active is not None:  # a capture records: optimizer.step() as a label
            outer_spans.active.stepping()

    def stepped(optimizer, args, kwargs) -> None:
        if outer_spans.active is not None:  # its label ends before the step does
            outer_spans.active.stepped()
        if timeline.mark is not None:
            timeline.leave()
        elif stepping_now:
            t0, i0 = stepping_now.pop()
            spent = perf() - t0
            timeline.acc[OPTIMIZER] += spent - (timeline.inner - i0)
            timeline.inner = i0 + spent
        if forward.looking or watch.count != compiles[0]:  # a compile in place swaps the slot
            compiles[0] = watch.count
            forward.check()
        run.optimizer_stepped(optimizer)

    # A script that compiles its optimizer step (torch.compile over opt.step()) has Dynamo trace
    # the step's hooks too: tuimon's boundary would be compiled in pieces (its own graph breaks,
    # a recompile each step as its counters change). Dynamo runs them as they are instead. The
    # eager variant compiles nothing (torch.compile hands the function back), so its hooks go
    # bare: torch.compiler.disable's wrapper costs a few µs a call, twice a step.
    optim.register_optimizer_step_pre_hook(stepping if bare else torch.compiler.disable(stepping))
    optim.register_optimizer_step_post_hook(stepped if bare else torch.compiler.disable(stepped))


def _hook_backward(torch, run) -> None:
    """backward(): the root tensor is the step's loss (the unscaled one under a GradScaler)."""
    from tuimon.runner.phases import BACKWARD

    timeline = run.timeline
    original_backward = torch.autograd.backward
    scaled: list = [None, None]  # the last GradScaler.scale(): [scaled tensor, what it scaled]
    perf = time.perf_counter

    def backward(tensors, *args, **kwargs):
        if not run.started:
            run.activity()
        t0 = run.backward_at = perf()  # a rank's own work ends here; DDP's all-reduce waits inside
        if timeline.mark is None:
            i0 = timeline.inner
            try:
                out = original_backward(tensors, *args, **kwargs)
            finally:
                spent = perf() - t0
                timeline.acc[BACKWARD] += spent - (timeline.inner - i0)
                timeline.inner = i0 + spent
        else:
            timeline.enter(BACKWARD)
            try:
                out = original_backward(tensors, *args, **kwargs)
            finally:
                timeline.leave()
        root = tensors[0] if isinstance(tensors, (list, tuple)) and tensors else tensors
        if root is scaled[0]:
            root = scaled[1]
        run.backward(root)
        return out

    torch.autograd.backward = backward
    original_grad = torch.autograd.grad

    def grad(outputs, *args, **kwargs):
        if kwargs.get("create_graph") or (len(args) > 3 and args[3]):  # a double backward to come
            run.double_backward(outputs)
        return original_grad(outputs, *args, **kwargs)

    torch.autograd.grad = grad
    scaler_cls = torch.amp.GradScaler
    original_scale, original_scaler_step = scaler_cls.scale, scaler_cls.step

    def scale(self, outputs):
        out = original_scale(self, outputs)
        if isinstance(outputs, torch.Tensor):
            scaled[:] = [out, outputs]
        return out

    def scaler_step(self, optimizer, *args, **kwargs):
        before = run.boundaries
        out = original_scaler_step(self, optimizer, *args, **kwargs)
        if run.boundaries == before:
            run.step_skipped(optimizer)
        return out

    scaler_cls.scale, scaler_cls.step = scale, scaler_step


def _hook_batches(run) -> None:
    """Batches: their wait is the step's data time; their first dimension its samples."""
    import torch.utils.data.dataloader as dataloader

    from tuimon.runner.phases import DATA

    timeline = run.timeline
    original_next = dataloader._BaseDataLoaderIter.__next__
    perf = time.perf_counter

    def next_batch(self):
        t0 = perf()
        if timeline.mark is None:
            i0 = timeline.inner
            try:
                batch = original_next(self)
            finally:
                t1 = perf()
                spent = t1 - t0
                timeline.acc[DATA] += spent - (timeline.inner - i0)
                timeline.inner = i0 + spent
        else:
            timeline.enter(DATA)
            try:
                batch = original_next(self)
            finally:
                timeline.leave()
            t1 = perf()
        run.batch(id(self._dataset), batch, t1 - t0, self)
        return batch

    dataloader._BaseDataLoaderIter.__next__ = next_batch


def _hook_train(torch, run) -> None:
    """``Module.train(False)``: a validation pass begins, or eval inside a step; ``train()`` ends it."""
    original_train = torch.nn.Module.train

    def train(self, mode: bool = True):
        if not mode:
            run.eval_mode()
        else:
            run.validating.training()
        return original_train(self, mode)

    torch.nn.Module.train = train


def _hook_process(s, run, warm, link: tuple) -> None:
    """The process: its end, an uncaught exception, Ctrl-C's signal, a fork (DataLoader workers),
    child processes it starts (not hooked: what they train is said, children.py). ``link``: its
    emitter, control lines, a rank's socket and the run's descriptors."""
    from tuimon.runner.script import ending
    from tuimon.runner.script.children import Children, forked, report_dir
    from tuimon.runner.script.steps import StopScript

    emitter, control, sock, fds = link
    atexit.register(ending.finished, run)
    if warm is not None:  # registered after: runs before finished (atexit is last in, first out)
        pid = os.getpid()
        atexit.register(lambda: os.getpid() == pid and not run.failed and warm.save(sys.modules["torch"]))
    original_hook = sys.excepthook
    script = s.program.script

    def excepthook(kind, exc, tb):
        try:
            ending.crashed(run, exc, "".join(traceback.format_exception(kind, exc, tb))[-8000:],
                           _where(exc, script))
        finally:
            if isinstance(exc, StopScript):  # tuimon's own stop, uncaught: one line, not its frames
                why = {"steps": "its --steps are done", "duration": "its --duration is up"}.get(
                    run.reason, "asked to stop")
                print(f"tuimon: stopped the script after step {run.i} ({why}), at a step boundary "
                      "as Ctrl-C would: its steps are measured", file=sys.stderr, flush=True)
            else:
                original_hook(kind, exc, tb)

    sys.excepthook = excepthook
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        def interrupted(signum, frame):
            if run.reason is None and run.enabled:
                run.reason = "stopped"
            raise KeyboardInterrupt

        signal.signal(signal.SIGINT, interrupted)

    os.register_at_fork(after_in_child=lambda: forked(run, emitter, control, sock, fds))
    run.children = Children(run, emitter, report_dir(s)).install()  # after finished's atexit
    threading.Thread(target=_no_step_watch, args=(run, s.run, fds[0], s.hooks.no_step_s),
                     daemon=True, name="tuimon-no-step").start()


def _seed(seed, torch) -> None:
    """--seed, before the script runs (best effort: a script that seeds itself wins)."""
    from tuimon.runner.seeding import seed_everything

    if seed is not None:
        seed_everything(torch, seed)


def _profiler(s, run):
    """The same profiler captures as a recipe's, over the script's steps."""
    from tuimon.runner.profiling import Options, Profiler

    profile = s.profile
    backward = {"off": False, "eager": True, "all": "all"}[profile.profile_backward]
    compiled = s.mode.removesuffix("+opt") != "eager"  # the model's mode (variants.OPT)
    if compiled and backward:
        backward = False  # module hooks on a compiled module would recompile it mid-run
    engine = run.engine
    return Profiler(device_type="cuda" if engine.on_cuda else "cpu", model=None, compiled=compiled,
                    defaults=Options(*profile.profile_window, backward), at_step=profile.profile_at,
                    out_dir=profile.profile_dir, run=s.run,
                    auto=profile.auto_profile, steps=engine.steps_asked, turns=engine.turns.on)


def _where(exc: BaseException, script: str | None) -> str | None:
    """'train.py:7' for the deepest frame in the script's own file, else the deepest frame
    outside torch and the standard library."""
    frames = traceback.extract_tb(exc.__traceback__)
    target = os.path.realpath(script) if script else None
    if target:
        mine = [f for f in frames if os.path.realpath(f.filename) == target]
        if mine:
            return f"{os.path.basename(mine[-1].filename)}:{mine[-1].lineno}"
    user = [f for f in frames if "site-packages" not in f.filename and "/lib/python" not in f.filename
            and "tuimon" not in f.filename]
    return f"{os.path.basename(user[-1].filename)}:{user[-1].lineno}" if user else None


def _no_step_watch(run, run_id: str, fd: int | None, seconds: float) -> None:
    """One line when no optimizer has stepped after ``seconds`` (written whole from this thread:
    one short line is one atomic write on the pipe); a wait for the first turn does not count,
    nor a compile (a first optimizer.step() that compiles is still a step to come)."""
    time.sleep(seconds)
    from tuimon.runner.script.ending import no_step_yet

    while (said := no_step_yet(run, seconds)) is None:
        time.sleep(1.0)
    if not said:
        return
    from tuimon import events

    text = run.children.no_step_text(seconds) or (
        f"no optimizer step in {seconds:g} s: tuimon times training loops that call optimizer.step()")
    line = events.encode(events.make(events.WARNING, run_id, text=text))
    with contextlib.suppress(OSError):
        os.write(fd, line.encode())
