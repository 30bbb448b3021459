"""python -m tuimon.runner: load a recipe, run one variant, stream events on its event fd.

Its settings are the run's record (tuimon/settings.py), JSON in ``TUIMON_SETTINGS`` as the
supervisor hands it to every child (control/child.py): nothing is parsed here.

Started by torchrun as one rank of a job (``tuimon RECIPE --nproc N``; its settings name the
session's rank socket), it talks to the supervisor over its own rank channel instead
(runner/rank_link.py), joins the job's process group and trains a DistributedDataParallel model
on its shard of the batches (runner/distributed.py)."""

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
from typing import NoReturn

from tuimon import events, failures, fixes
from tuimon.envvars import SETTINGS as SETTINGS_ENV
from tuimon.runner.control import Control
from tuimon.runner.crash import cuda_memory, recipe_frame
from tuimon.runner.device import SetupError, device_name, resolve_device
from tuimon.runner.emitter import Emitter
from tuimon.runner.orphan import watch_parent
from tuimon.runner.rank_link import connect, identity
from tuimon.runner.seeding import seed_everything
from tuimon.runner.torch_env import TorchTooOld, absolute, absolute_paths, check_version, versions
from tuimon.settings import RunSettings
from tuimon.variants import compiles_optimizer, model_mode


def tail(text: str, lines: int = 12) -> str:
    """The last ``lines`` lines; a traceback keeps its first line too, so it still reads as one."""
    rows = text.rstrip().splitlines()
    if len(rows) > lines and rows[0].startswith("Traceback"):
        return "\n".join([rows[0], "  ...", *rows[-lines:]])
    return "\n".join(rows[-lines:])


def main(settings: RunSettings | None = None) -> int:
    absolute_paths()  # the Inductor cache and the trace directory, before torch reads them
    s = settings or RunSettings.from_env()
    if s is None:
        print(f"python -m tuimon.runner: no {SETTINGS_ENV} in the environment (tuimon starts it)",
              file=sys.stderr)
        return 2
    recipe_path = s.program.recipe
    profile_dir = absolute(s.profile.profile_dir)
    faulthandler.enable()  # a segfault in a kernel still leaves Python stacks in the run's log
    faulthandler.register(signal.SIGUSR1, all_threads=True)  # `dump`: stacks of a live runner
    ident = identity() if s.process.channel else None  # a rank of a job
    if ident is None:
        watch_parent()  # a supervisor killed while this run is stuck in a step: do not outlive it
        emitter = Emitter(s.process.event_fd, s.run)
        control = Control(s.process.control_fd)
    else:
        watch_parent(parent=os.getppid())  # torchrun's agent, and the supervisor behind it
        sock = connect(s.process.channel, s.process.token, s.run, ident)
        emitter = Emitter(sock.fileno(), s.run)
        control = Control(None, sock=sock)
    emitter.emit_now(events.PHASE, phase="building")
    stage = "build"
    warm = None
    said: list[tuple[str, dict]] = []  # what came of the run's fixes: notes after run_started
    try:
        import torch

        try:
            newer = check_version(torch)
        except TorchTooOld as exc:
            raise SetupError(str(exc)) from None
        if newer:
            emitter.emit(events.WARNING, text=newer, note=True)

        from tuimon import recipe as contract
        from tuimon.runner import loop
        from tuimon.runner.compile_watch import CompileWatch

        rank_fields = {}
        if ident is None:
            device = resolve_device(torch, s.device)
        else:
            from tuimon.runner import distributed

            device = distributed.rank_device(torch, s.device, ident["local_rank"],
                                             ident["local_world_size"])
            rank_fields = {**ident, "backend": distributed.init(torch, device)}
        if s.threads:
            torch.set_num_threads(s.threads)
        if s.mode != "eager":  # compile artifacts: loaded before the first compile (warm start)
            from tuimon.runner.warm_start import WarmStart

            warm = WarmStart(emitter)
            warm.load(torch)
        from tuimon.runner.fixes import Fixes, channels_last, repeated_note

        fx = Fixes(fixes.asked(s.fixes, s.axes, s.knobs), lambda text, **f: said.append((text, f)),
                   mode=s.mode, precision=s.precision, on_cuda=device.startswith("cuda"),
                   is_script=False)
        mode, precision = fx.mode, fx.precision  # the variant's, or what its fixes make of it
        fx.flags()  # before anything compiles
        fx.constructors()  # before build() makes the optimizer
        module = contract.load_module(recipe_path)
        sizes = contract.resolve_defaults(getattr(module, "DEFAULTS", None), device)
        # The fixed --set knobs, then its axes' (the reserved axis ``fix`` is the run's fixes).
        extra = contract.Extra(fixes.without_axis((*s.knobs, *s.axes)))
        cfg = contract.Config(
            device=device,
            batch_size=s.batch_size or sizes["batch_size"],
            image_size=s.image_size or sizes["image_size"],
            seed=s.seed,
            extra=extra,
            mode=mode,
            precision=precision,
        )
        seed_everything(torch, s.seed)
        recipe = contract.validate(module.build(cfg), recipe_path)
        if unread := extra.unread():  # --set knobs nobody read: a typo, or the wrong recipe
            emitter.emit(events.WARNING, text=f"the recipe never read --set {', '.join(unread)}: "
                         "a typo? (runs that differ only by it are the same)")
        recipe.model.to(device)
        recipe.model.train()
        if fx.on("channels-last"):
            four = channels_last(recipe.model) > 0
            fx.tell("channels-last", four, "the model and its 4-D inputs in channels_last" if four
                    else "no 4-D parameter or buffer (no convolution): nothing to change")
        if ident is not None:  # DDP around the model, this rank's shard of the batches
            recipe.model = distributed.wrap(torch, recipe.model, device)
            recipe.batches = distributed.shard(torch, recipe.batches, ident["rank"],
                                               ident["world_size"])
        # Round 1 runs the whole length (a recipe's own steps without --steps / --duration).
        steps, duration = s.length.this_process(sizes["steps"])
        turns = s.turns
        trainer = loop.Trainer(recipe, device, loop.LoopSettings(
            mode, precision, steps, duration, s.fixed_warmup, turns.turn_steps, turns.turn_s,
            turns.turn_first, s.length.steady_duration),
            compile_model=lambda m, mode: fx.compile_model(
                m, torch.compile, fx.compile_kwargs({"mode": mode})),
            channels_last=fx.settled.get("channels-last", False))
        recipe_fixes(fx, trainer, recipe)
        trainer.ranked = ident is not None
        watch = CompileWatch()
        watch.install()
        trace = None
        if s.mode != "eager":
            from tuimon.runner.compile_trace import TraceListener

            trace = TraceListener(emitter, watch)
            trace.install()
            from tuimon.runner.torch_hints import HintListener

            HintListener(emitter).install()
        profiler = make_profiler(torch, s, trainer, recipe.model, steps, profile_dir)
        notes = variant_notes(model_mode(mode), device)
        if compiles_optimizer(mode) and not fx.on("opt"):
            notes.append("the optimizer's step is compiled too (mode default)" if
                         trainer.optimizer_compiled else "the optimizer's step is left eager: "
                         f"{type(recipe.optimizer).__name__} defines its own step")
        emitter.emit_now(
            events.RUN_STARTED,
            pid=os.getpid(),
            mode=s.mode,
            precision=s.precision,
            amp_dtype=str(trainer.dtype).replace("torch.", "") if trainer.dtype else None,
            grad_scaler=trainer.scaler is not None,
            device=device,
            device_name=device_name(torch, device),
            **versions(torch),
            recipe=recipe.name or os.path.basename(recipe_path),
            params=loop.param_count(recipe.model),
            batch_size=cfg.batch_size,
            image_size=cfg.image_size,
            seed=s.seed,
            steps=steps,
            duration=duration,
            round=s.length.round,
            warmup=s.warmup,
            threads=torch.get_num_threads(),
            extra=dict(extra),
            notes=notes,
            **({"fixes": list(fx.names)} if fx.names else {}),
            # forked with torch already imported: its start leaves out these seconds
            **({"preloaded_s": s.process.preloaded_s} if s.process.preloaded_s else {}),
            **rank_fields,
        )
        say_fixes(emitter, said)
        if model_mode(s.mode) != "eager":  # its repeated block: tuimon try's regional
            text, fact = repeated_note(recipe.model)
            emitter.emit(events.MODEL, text=text, repeated=fact)
        stage = "step"
        started = time.monotonic()
        first = None
        if s.profile.count_flops and ident is None:  # a job's ranks: not counted (measuring.md)
            from tuimon.runner import flop_event

            def first() -> float:
                nonlocal started  # its seconds are no training's, as they are no --duration's
                took = flop_event.emit(emitter, device, lambda: flop_event.recipe_count(
                    trainer, loop.mover(device)))
                started += took
                return took
        reason = loop.run(trainer, emitter, watch, control, profiler, first=first)
        if warm is not None:
            warm.save(torch)
        if text := watch.nothing_compiled(s.mode):
            emitter.emit_now(events.WARNING, text=text)
        emitter.emit_now(
            events.FINISHED,
            reason=reason,
            seconds=round(time.monotonic() - started, 3),
            paused_s=round(control.paused_s, 3),
            compiles=watch.compiled,  # attempts that made a graph (a failed one runs eager)
            graph_breaks=trace.graph_breaks if trace else 0,
            recompiles=trace.recompiles if trace else 0,
            compile_s=round(watch.total_s, 3),
            profile_s=round(profiler.overhead_s, 4),
        )
        if ident is not None:  # every rank stops at the same step: none waits in a collective
            distributed.finish(torch)
        return 0
    except BaseException as exc:  # noqa: BLE001 - every failure becomes an event, then exit
        if isinstance(exc, KeyboardInterrupt):
            if warm is not None and stage == "step":  # what it compiled before the stop
                warm.save(sys.modules["torch"])
            emitter.emit_now(events.FINISHED, reason="stopped")
            return 130
        say_fixes(emitter, said)  # what the fixes did before the failure (fused refused, ...)
        memory = cuda_memory(exc)
        text = failures.plain(str(exc)).strip()  # a coloured message: its text
        emitter.emit_now(
            events.FAILED,
            stage=stage,
            error=type(exc).__name__,
            message=text.splitlines()[0][:500] if text else "",
            traceback=tail(failures.plain(traceback.format_exc()), 20),
            where=recipe_frame(exc, recipe_path),
            **failures.of_exception(exc, memory),
            **memory,
        )
        traceback.print_exc()
        return 2 if stage == "build" else 1
    finally:
        sys.stdout.flush()
        sys.stderr.flush()


def make_profiler(torch, s: RunSettings, trainer, model, steps: int | None, out_dir: str | None):
    from tuimon.runner.profiling import Options, Profiler

    profile = s.profile
    backward = {"off": False, "eager": True, "all": "all"}[profile.profile_backward]
    compiled = model_mode(s.mode) != "eager"  # the model (eager+opt compiles its optimizer only)
    hook_guards = compiled and backward == "all"
    if hook_guards:
        # Dynamo ignores module hooks added after compilation unless it guards on them; with the
        # guards, a capture's hooks recompile (with graph breaks) and their removal switches back.
        torch._dynamo.config.skip_nnmodule_hook_guards = False
    return Profiler(device_type=trainer.device_type, model=model, compiled=compiled,
                    defaults=Options(*profile.profile_window, backward), at_step=profile.profile_at,
                    out_dir=out_dir, run=s.run, hook_guards=hook_guards,
                    auto=profile.auto_profile, steps=steps,
                    turns=bool(s.turns.turn_steps or s.turns.turn_s))


def recipe_fixes(fx, trainer, recipe) -> None:
    """What the trainer made of the fixes it applies (opt, amp); the rest settled: the recipe
    is built, nothing else will be made."""
    if fx.on("opt"):
        name = type(recipe.optimizer).__name__
        fx.tell("opt", trainer.optimizer_compiled, f"the optimizer's step compiled too ({name}, "
                "mode default), as a MODE+opt variant does" if trainer.optimizer_compiled else
                f"the optimizer's step is left eager: {name} defines its own step")
    if fx.on("amp"):
        dtype = str(trainer.dtype).replace("torch.", "")
        fx.tell("amp", True, f"autocast to {dtype} around the forward and loss" +
                (", with a GradScaler" if trainer.scaler is not None else ""))
    fx.settle({"foreach": f"{type(recipe.optimizer).__name__} is none of torch.optim's "
               "optimizers that take foreach", "regional": "the model was not compiled"})


def say_fixes(emitter, said: list) -> None:
    while said:
        text, fields = said.pop(0)
        emitter.emit(events.WARNING, text=text, note=True, **fields)


def variant_notes(mode: str, device: str) -> list[str]:
    notes = []
    if not device.startswith("cuda") and mode in ("reduce-overhead", "max-autotune"):
        same = "default" if mode == "reduce-overhead" else "max-autotune-no-cudagraphs"
        notes.append(f"{mode}: same as {same} on CPU (CUDA graphs need a GPU)")
    return notes


def leave(code: int) -> NoReturn:
    """End the process without Python's teardown of torch's modules, 1-3 s of a 2-core machine
    after the run has said all it has to say (bench/RESULTS.md, "a runner's exit"). What has to
    run at exit still runs, in the interpreter's order: the threads it would wait for, then the
    atexit handlers (Inductor's compile workers, multiprocessing's children); then the streams
    are flushed."""
    try:
        threading._shutdown()  # CPython's own first step at exit (private, stable since 3.4)
        atexit._run_exitfuncs()
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(code)


if __name__ == "__main__":
    leave(main())
