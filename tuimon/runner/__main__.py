"""python -m tuimon.runner: load a recipe, run one variant, stream events on --event-fd.

Started by torchrun as one rank of a job (``tuimon RECIPE --nproc N``; TUIMON_RANKS in its
environment), it talks to the supervisor over its own rank channel instead (runner/rank_link.py),
joins the job's process group and trains a DistributedDataParallel model on its shard of the
batches (runner/distributed.py)."""

from __future__ import annotations

import argparse
import faulthandler
import os
import signal
import sys
import time
import traceback

from tuimon import events, failures
from tuimon.lengths import process_length
from tuimon.runner.control import Control
from tuimon.runner.crash import cuda_memory, recipe_frame
from tuimon.runner.device import SetupError, device_name, resolve_device
from tuimon.runner.emitter import Emitter
from tuimon.runner.orphan import watch_parent
from tuimon.runner.rank_link import connect, from_env
from tuimon.runner.seeding import seed_everything
from tuimon.runner.torch_env import TorchTooOld, absolute, absolute_paths, check_version, versions
from tuimon.variants import compiles_optimizer, model_mode


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m tuimon.runner")
    p.add_argument("--recipe", required=True)
    p.add_argument("--run-id", required=True)
    p.add_argument("--mode", default="eager")
    p.add_argument("--precision", default="fp32")
    p.add_argument("--device", default="auto")
    p.add_argument("--steps", type=int)
    p.add_argument("--duration", type=float)
    p.add_argument("--warmup", default="auto")  # "auto": the statistics find it in the data
    p.add_argument("--turns", type=int, default=0, help="steps per turn (interleaved schedule)")
    p.add_argument("--share", type=int, default=1, metavar="K",
                   help="one of the variant's K processes (--repeats K): round 1 runs the whole "
                   "length, the others a K-th of it (tuimon/lengths.py)")
    p.add_argument("--round", type=int, help="its round of the variant's K processes")
    p.add_argument("--steady-duration", action="store_true",
                   help="--duration counts stepping time only, compiles aside (a sweep's budget)")
    p.add_argument("--turn-seconds", type=float, default=0.0,
                   help="seconds of stepping per turn (interleaved schedule, without --turns)")
    p.add_argument("--turn-first", action="store_true",
                   help="a rank of a job: wait for the first turn; the supervisor ends each turn")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--batch-size", type=int)
    p.add_argument("--image-size", type=int)
    p.add_argument("--threads", type=int)
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--event-fd", type=int)
    p.add_argument("--control-fd", type=int,
                   help="read pause / resume / stop / profile lines from this fd (EOF: the parent is "
                   "gone, stop)")
    p.add_argument("--profile-dir", help="write each capture's chrome trace here")
    p.add_argument("--profile-at", type=int, metavar="STEP", help="capture a profiler window from STEP")
    p.add_argument("--profile-window", default="1,2,3", metavar="WAIT,WARMUP,ACTIVE",
                   help="the default window of a capture (default: 1,2,3)")
    p.add_argument("--no-auto-profile", action="store_true",
                   help="no automatic diagnosis capture (one short window when none is asked for)")
    p.add_argument("--profile-backward", choices=("off", "eager", "all"), default="off",
                   help="backward attribution by default: off, eager variants, or all (compiled "
                   "variants then guard on module hooks: graph breaks inside a capture)")
    return p.parse_args(argv)


def tail(text: str, lines: int = 12) -> str:
    """The last ``lines`` lines; a traceback keeps its first line too, so it still reads as one."""
    rows = text.rstrip().splitlines()
    if len(rows) > lines and rows[0].startswith("Traceback"):
        return "\n".join([rows[0], "  ...", *rows[-lines:]])
    return "\n".join(rows[-lines:])


def main(argv: list[str] | None = None) -> int:
    absolute_paths()  # the Inductor cache and the trace directory, before torch reads them
    args = parse_args(argv)
    args.profile_dir = absolute(args.profile_dir)
    faulthandler.enable()  # a segfault in a kernel still leaves Python stacks in the run's log
    faulthandler.register(signal.SIGUSR1, all_threads=True)  # `dump`: stacks of a live runner
    job = from_env()  # (channel, identity) for a rank of a job, else None
    if job is None:
        watch_parent()  # a supervisor killed while this run is stuck in a step: do not outlive it
        emitter = Emitter(args.event_fd, args.run_id)
        control = Control(args.control_fd)
    else:
        channel, ident = job
        watch_parent(parent=os.getppid())  # torchrun's agent, and the supervisor behind it
        sock = connect(channel["path"], channel["token"], args.run_id, ident)
        emitter = Emitter(sock.fileno(), args.run_id)
        control = Control(None, sock=sock)
    emitter.emit_now(events.PHASE, phase="building")
    stage = "build"
    warm = None
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
        if job is None:
            device = resolve_device(torch, args.device)
        else:
            from tuimon.runner import distributed

            device = distributed.rank_device(torch, args.device, ident["local_rank"],
                                             ident["local_world_size"])
            rank_fields = {**ident, "backend": distributed.init(torch, device)}
        if args.threads:
            torch.set_num_threads(args.threads)
        if args.mode != "eager":  # compile artifacts: loaded before the first compile (warm start)
            from tuimon.runner.warm_start import WarmStart

            warm = WarmStart(emitter)
            warm.load(torch)
        module = contract.load_module(args.recipe)
        sizes = contract.resolve_defaults(getattr(module, "DEFAULTS", None), device)
        extra = contract.Extra(kv.split("=", 1) for kv in args.set)
        cfg = contract.Config(
            device=device,
            batch_size=args.batch_size or sizes["batch_size"],
            image_size=args.image_size or sizes["image_size"],
            seed=args.seed,
            extra=extra,
        )
        seed_everything(torch, args.seed)
        recipe = contract.validate(module.build(cfg), args.recipe)
        if unread := extra.unread():  # --set knobs nobody read: a typo, or the wrong recipe
            emitter.emit(events.WARNING, text=f"the recipe never read --set {', '.join(unread)}: "
                         "a typo? (runs that differ only by it are the same)")
        recipe.model.to(device)
        recipe.model.train()
        if job is not None:  # DDP around the model, this rank's shard of the batches
            recipe.model = distributed.wrap(torch, recipe.model, device)
            recipe.batches = distributed.shard(torch, recipe.batches, ident["rank"],
                                               ident["world_size"])
        asked = args.steps if args.steps is not None or args.duration is not None else sizes["steps"]
        steps, duration = process_length(asked, args.duration, args.share, args.round)
        # With "auto" only the first step is labelled warm-up here; the statistics find the rest.
        fixed_warmup = 1 if args.warmup == "auto" else int(args.warmup)
        settings = loop.LoopSettings(args.mode, args.precision, steps, duration, fixed_warmup,
                                     args.turns, args.turn_seconds, args.turn_first,
                                     args.steady_duration)
        trainer = loop.Trainer(recipe, device, settings)
        trainer.ranked = job is not None
        watch = CompileWatch()
        watch.install()
        trace = None
        if args.mode != "eager":
            from tuimon.runner.compile_trace import TraceListener

            trace = TraceListener(emitter, watch)
            trace.install()
            from tuimon.runner.torch_hints import HintListener

            HintListener(emitter).install()
        profiler = make_profiler(torch, args, trainer, recipe.model, steps)
        notes = variant_notes(model_mode(args.mode), device)
        if compiles_optimizer(args.mode):
            notes.append("the optimizer's step is compiled too (mode default)" if
                         trainer.optimizer_compiled else "the optimizer's step is left eager: "
                         f"{type(recipe.optimizer).__name__} defines its own step")
        emitter.emit_now(
            events.RUN_STARTED,
            pid=os.getpid(),
            mode=args.mode,
            precision=args.precision,
            amp_dtype=str(trainer.dtype).replace("torch.", "") if trainer.dtype else None,
            grad_scaler=trainer.scaler is not None,
            device=device,
            device_name=device_name(torch, device),
            **versions(torch),
            recipe=recipe.name or os.path.basename(args.recipe),
            params=loop.param_count(recipe.model),
            batch_size=cfg.batch_size,
            image_size=cfg.image_size,
            seed=args.seed,
            steps=steps,
            duration=duration,
            round=args.round,
            warmup=args.warmup,
            threads=torch.get_num_threads(),
            extra=dict(extra),
            notes=notes,
            **rank_fields,
        )
        stage = "step"
        started = time.monotonic()
        reason = loop.run(trainer, emitter, watch, control, profiler)
        if warm is not None:
            warm.save(torch)
        if text := watch.nothing_compiled(args.mode):
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
        if job is not None:  # every rank stops at the same step: none waits in a collective
            distributed.finish(torch)
        return 0
    except BaseException as exc:  # noqa: BLE001 - every failure becomes an event, then exit
        if isinstance(exc, KeyboardInterrupt):
            if warm is not None and stage == "step":  # what it compiled before the stop
                warm.save(sys.modules["torch"])
            emitter.emit_now(events.FINISHED, reason="stopped")
            return 130
        memory = cuda_memory(exc)
        text = failures.plain(str(exc)).strip()  # a coloured message: its text
        emitter.emit_now(
            events.FAILED,
            stage=stage,
            error=type(exc).__name__,
            message=text.splitlines()[0][:500] if text else "",
            traceback=tail(failures.plain(traceback.format_exc()), 20),
            where=recipe_frame(exc, args.recipe),
            **failures.of_exception(exc, memory),
            **memory,
        )
        traceback.print_exc()
        return 2 if stage == "build" else 1
    finally:
        sys.stdout.flush()
        sys.stderr.flush()


def make_profiler(torch, args: argparse.Namespace, trainer, model, steps: int | None = None):
    from tuimon.runner.profiling import Options, Profiler, parse_window

    try:
        wait, warmup, active = parse_window(args.profile_window)
    except ValueError as exc:
        raise SetupError(f"--profile-window: {exc}") from None
    backward = {"off": False, "eager": True, "all": "all"}[args.profile_backward]
    compiled = model_mode(args.mode) != "eager"  # the model (eager+opt compiles its optimizer only)
    hook_guards = compiled and backward == "all"
    if hook_guards:
        # Dynamo ignores module hooks added after compilation unless it guards on them; with the
        # guards, a capture's hooks recompile (with graph breaks) and their removal switches back.
        torch._dynamo.config.skip_nnmodule_hook_guards = False
    return Profiler(device_type=trainer.device_type, model=model, compiled=compiled,
                    defaults=Options(wait, warmup, active, backward), at_step=args.profile_at,
                    out_dir=args.profile_dir, run=args.run_id, hook_guards=hook_guards,
                    auto=not args.no_auto_profile, steps=steps,
                    turns=bool(args.turns or args.turn_seconds))


def variant_notes(mode: str, device: str) -> list[str]:
    notes = []
    if not device.startswith("cuda") and mode in ("reduce-overhead", "max-autotune"):
        same = "default" if mode == "reduce-overhead" else "max-autotune-no-cudagraphs"
        notes.append(f"{mode}: same as {same} on CPU (CUDA graphs need a GPU)")
    return notes


if __name__ == "__main__":
    raise SystemExit(main())
