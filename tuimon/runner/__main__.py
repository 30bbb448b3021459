"""python -m tuimon.runner: load a recipe, run one variant, stream events on its event fd.

Its settings are the run's record (tuimon/settings.py), JSON in ``TUIMON_SETTINGS`` as the
supervisor hands it to every child (control/child.py): nothing is parsed here.

Started by torchrun as one rank of a job (``tuimon RECIPE --nproc N``; its settings name the
session's rank socket), it talks to the supervisor over its own rank channel instead
(runner/link.py), joins the job's process group and trains a DistributedDataParallel model
on its shard of the batches (runner/distributed.py)."""

from __future__ import annotations

import atexit
import contextlib
import faulthandler
import os
import signal
import sys
import threading
import traceback
from typing import NoReturn

from tuimon import events, failures, fixes
from tuimon.envvars import SETTINGS as SETTINGS_ENV
from tuimon.runner import recipe_loop
from tuimon.runner.compile_watch import listen
from tuimon.runner.crash import recipe_frame
from tuimon.runner.device import SetupError, resolve_device
from tuimon.runner.engine import CaptureWindow, StepEngine, emit_failure
from tuimon.runner.flop_event import RecipeFlops
from tuimon.runner.link import identity, open_link
from tuimon.runner.memory_phases import MemoryStep, device_index
from tuimon.runner.seeding import seed_everything
from tuimon.runner.torch_env import TorchTooOld, absolute, absolute_paths, check_version
from tuimon.runner.trainer import Trainer, param_count
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
    faulthandler.enable()  # a segfault in a kernel still leaves Python stacks in the run's log
    faulthandler.register(signal.SIGUSR1, all_threads=True)  # `dump`: stacks of a live runner
    ident = identity() if s.process.channel else None  # a rank of a job
    emitter, control, _ = open_link(s, ident)
    emitter.emit_now(events.PHASE, phase="building")
    run = RecipeRun(s, ident, emitter, control)
    try:
        run.build()
        run.stage = "step"
        run.train()
        return 0
    except BaseException as exc:  # noqa: BLE001 - every failure becomes an event, then exit
        if isinstance(exc, KeyboardInterrupt):
            if run.warm is not None and run.stage == "step":  # what it compiled before the stop
                run.warm.save(sys.modules["torch"])
            emitter.emit_now(events.FINISHED, reason="stopped")
            return 130
        run.say_fixes()  # what the fixes did before the failure (fused refused, ...)
        trace = tail(failures.plain(traceback.format_exc()), 20)
        where = recipe_frame(exc, s.program.recipe)
        if run.engine is not None:
            run.engine.failed(exc, run.stage, trace, where)
        else:
            emit_failure(emitter, exc, run.stage, trace, where)
        traceback.print_exc()
        return 2 if run.stage == "build" else 1
    finally:
        sys.stdout.flush()
        sys.stderr.flush()


class RecipeRun:
    """One variant of a recipe in this process: built (``build``: the device, the fixes, the
    recipe's model and batches, the trainer, the step engine and its components), then trained
    (``train``: runner/recipe_loop.py)."""

    def __init__(self, s: RunSettings, ident: dict | None, emitter, control) -> None:
        self.s, self.ident, self.emitter, self.control = s, ident, emitter, control
        self.stage = "build"
        self.warm = None  # compile artifacts: loaded before the first compile (warm start)
        self.engine: StepEngine | None = None
        self.said: list[tuple[str, dict]] = []  # what came of the run's fixes: notes after run_started

    def build(self) -> None:
        import torch

        from tuimon import recipe as contract
        from tuimon.runner import distributed
        from tuimon.runner.fixes import Fixes, channels_last

        s, ident, emitter = self.s, self.ident, self.emitter
        try:
            newer = check_version(torch)
        except TorchTooOld as exc:
            raise SetupError(str(exc)) from None
        if newer:
            emitter.emit(events.WARNING, text=newer, note=True)
        self.rank_fields = {}
        if ident is None:
            device = resolve_device(torch, s.device)
        else:
            device = distributed.rank_device(torch, s.device, ident["local_rank"], ident["local_world_size"])
            self.rank_fields = {**ident, "backend": distributed.init(torch, device)}
        if s.threads:
            torch.set_num_threads(s.threads)
        if s.mode != "eager":
            from tuimon.runner.warm_start import WarmStart

            self.warm = WarmStart(emitter)
            self.warm.load(torch)
        fx = self.fx = Fixes(fixes.asked(s.fixes, s.axes, s.knobs),
                             lambda text, **f: self.said.append((text, f)), mode=s.mode,
                             precision=s.precision, on_cuda=device.startswith("cuda"), is_script=False)
        fx.flags()  # before anything compiles
        fx.constructors()  # before build() makes the optimizer
        module = contract.load_module(s.program.recipe)
        self.sizes = contract.resolve_defaults(getattr(module, "DEFAULTS", None), device)
        # The fixed --set knobs, then its axes' (the reserved axis ``fix`` is the run's fixes).
        self.extra = extra = contract.Extra(fixes.without_axis((*s.knobs, *s.axes)))
        self.cfg = cfg = contract.Config(
            device=device, batch_size=s.batch_size or self.sizes["batch_size"],
            image_size=s.image_size or self.sizes["image_size"], seed=s.seed, extra=extra,
            mode=fx.mode, precision=fx.precision)  # the variant's, or what its fixes make of it
        seed_everything(torch, s.seed)
        recipe = contract.validate(module.build(cfg), s.program.recipe)
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
            recipe.batches = distributed.shard(torch, recipe.batches, ident["rank"], ident["world_size"])
        self.trainer = Trainer(recipe, device, fx.mode, fx.precision, compile_model=lambda m, mode: (
            fx.compile_model(m, torch.compile, fx.compile_kwargs({"mode": mode}))),
            channels_last=fx.settled.get("channels-last", False))
        recipe_fixes(fx, self.trainer, recipe)
        self.engine = self._engine(torch, device)

    def _engine(self, torch, device: str) -> StepEngine:
        """The step engine of this run, with its components and its compile listeners."""
        s, trainer = self.s, self.trainer
        watch, trace = listen(s.mode, self.emitter)
        engine = StepEngine(s, self.emitter, self.control, watch, own_steps=self.sizes["steps"],
                            ranked=self.ident is not None)
        engine.trace = trace
        watch.on_start = engine.compiling
        engine.add(CaptureWindow(make_profiler(torch, s, trainer, trainer.recipe.model,
                                               engine.steps_asked, absolute(s.profile.profile_dir))))
        if device.startswith("cuda"):
            engine.add(MemoryStep(torch.cuda, device_index(device), s.mode != "eager"))
        if s.profile.count_flops and self.ident is None:  # a job's ranks: not counted (measuring.md)
            engine.add(RecipeFlops(trainer))
        return engine

    def train(self) -> None:
        torch = sys.modules["torch"]
        s, trainer, engine = self.s, self.trainer, self.engine
        recipe, fx = trainer.recipe, self.fx
        notes = variant_notes(model_mode(s.mode), trainer.device)
        if compiles_optimizer(s.mode) and not fx.on("opt"):
            notes.append("the optimizer's step is compiled too (mode default)" if
                         trainer.optimizer_compiled else "the optimizer's step is left eager: "
                         f"{type(recipe.optimizer).__name__} defines its own step")
        engine.open(trainer.device, trainer.device_type == "cuda", dict(
            amp_dtype=str(trainer.dtype).replace("torch.", "") if trainer.dtype else None,
            grad_scaler=trainer.scaler is not None,
            recipe=recipe.name or os.path.basename(s.program.recipe),
            params=param_count(recipe.model), batch_size=self.cfg.batch_size,
            image_size=self.cfg.image_size, extra=dict(self.extra), notes=notes,
            **({"fixes": list(fx.names)} if fx.names else {}),
            # forked with torch already imported: its start leaves out these seconds
            **({"preloaded_s": s.process.preloaded_s} if s.process.preloaded_s else {}),
            **self.rank_fields))
        self.say_fixes()
        if model_mode(s.mode) != "eager":  # its repeated block: tuimon try's regional
            from tuimon.runner.fixes import repeated_note

            text, fact = repeated_note(recipe.model)
            self.emitter.emit(events.MODEL, text=text, repeated=fact)
        reason = recipe_loop.run(trainer, engine)
        if self.warm is not None:
            self.warm.save(torch)
        engine.finish(reason)
        if self.ident is not None:  # every rank stops at the same step: none waits in a collective
            from tuimon.runner import distributed

            distributed.finish(torch)

    def say_fixes(self) -> None:
        while self.said:
            text, fields = self.said.pop(0)
            self.emitter.emit(events.WARNING, text=text, note=True, **fields)


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
