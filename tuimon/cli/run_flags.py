"""``tuimon [RECIPE]``'s flags: the parser, its help texts and defaults (cli/run.py runs what
they ask for)."""

from __future__ import annotations

import argparse

from tuimon import __version__
from tuimon.cli.args import (
    DEFAULT_CACHE,
    DEFAULT_OUT,
    Parser,
    budget_arg,
    device_arg,
    fps_arg,
    horizon_arg,
    key_value,
    limited,
    warmup_arg,
    window_arg,
)
from tuimon.cli.warm import add_flags as add_warm_flags
from tuimon.settings import (
    AUTO_REPEATS,
    DEVICE,
    MARGIN_PCT,
    PRECISION,
    PROFILE_WINDOW,
    SEED,
    TURN_S,
    UNTIL_KNOWN_BUDGET_S,
    WARMUP,
    window_text,
)
from tuimon.variants import MODES, OPT


def run_parser() -> Parser:
    p = Parser(
        prog="tuimon",
        description="Run a training recipe as eager and torch.compile variants, side by side, "
        "and export the eager-vs-compiled summary. With no RECIPE, runs a built-in demo.",
        epilog="Other commands: 'tuimon sweep RECIPE' races every mode and precision for a "
        "verdict; 'tuimon summary SESSION_DIR' re-exports a session's summary; "
        "'tuimon report SESSION_DIR' writes its report.html (figures, offline); "
        "'tuimon export SESSION_DIR --trace F.json --tensorboard DIR' writes it for Perfetto and "
        "TensorBoard; "
        "'tuimon replay SESSION_DIR' opens the TUI on a recorded session; "
        "'tuimon attach [SESSION_DIR]' opens the TUI again on a session running in the background; "
        "'tuimon serve [SESSION_DIR]' puts it in a browser; "
        "'tuimon ls' lists sessions; 'tuimon doctor' says what this machine gives tuimon.",
    )
    _what_runs(p)
    _how_long(p)
    _until_known(p)
    _how_scheduled(p)
    _the_answer(p)
    _probes_and_store(p)
    _captures(p)
    _script_flags(p)
    _view(p)
    return p


def _what_runs(p: Parser) -> None:
    """What runs, in which variants."""
    p.add_argument("recipe", nargs="?", help="a recipe file (defines build(cfg)); default: demo. "
                   "Your own script instead: tuimon run [options] -- python train.py ...")
    p.add_argument("--modes", default="eager,default",
                   help=f"comma list of compile modes: {', '.join(MODES)} (default: eager,default); "
                   f"MODE{OPT} compiles the optimizer step too (default{OPT})")
    p.add_argument("--compile-optimizer", action="store_true",
                   help=f"race each compiled mode also with its optimizer step compiled (MODE{OPT}: "
                   "torch.compile leaves optimizer.step() alone unless asked)")
    p.add_argument("--precision", default=PRECISION,
                   help="comma list of precisions: fp32, amp (autocast: bf16 on CPU; bf16 or "
                   "fp16+GradScaler on CUDA) (default: fp32)")


def _how_long(p: Parser) -> None:
    """How long, and what is measured: steps, warm-up, sizes, seed, device."""
    p.add_argument("--steps", type=limited("steps"),
                   help="steps per variant (default: the recipe's, for its device)")
    p.add_argument("--duration", type=limited("duration"), metavar="SECONDS",
                   help="time limit per variant; with --steps, whichever comes first")
    p.add_argument("--warmup", type=warmup_arg, default=WARMUP, metavar="STEPS|auto",
                   help="steps kept out of the steady state: 'auto' finds where step times settle "
                   "(MSER-5 on the step times), a number fixes it (default: auto)")
    p.add_argument("--batch-size", type=limited("batch-size"), help="override the recipe's batch size")
    p.add_argument("--image-size", type=limited("image-size"), help="override the recipe's image size")
    p.add_argument("--seed", type=limited("seed"), default=SEED,
                   help=f"seed for model and data (default: {SEED})")
    p.add_argument("--device", type=device_arg, default=DEVICE,
                   help="auto, cpu, cuda or cuda:N (default: auto = cuda when available)")


def _until_known(p: Parser) -> None:
    """Stop when the answer is known (docs/measuring.md#until-known)."""
    p.add_argument("--until-known", action="store_true",
                   help="run rounds of processes until the answer is known: each round ends once "
                   "its processes' compiles have settled and they have enough steady steps; after "
                   "3 rounds or more the session stops as soon as the speedup's interval (valid "
                   "however early it stops) says faster, slower, or the same within --margin "
                   "(default for a script given no --steps / --duration; for a recipe, a sweep or "
                   "try, give it)")
    p.add_argument("--budget", type=budget_arg, metavar="TIME",
                   help="--until-known's cap on stepping, compiles and starts aside (20m, 1h30m, or "
                   f"seconds; default {UNTIL_KNOWN_BUDGET_S / 60:g}m): at the cap the answer is what "
                   "it is, cannot tell included; given alone, it means --until-known")
    p.add_argument("--margin", type=limited("margin"), metavar="PCT",
                   help="--until-known: a speedup whose interval lies within ±PCT %% of 1 is \"the "
                   f"same\", and the session stops there (default: {MARGIN_PCT:g})")
    p.add_argument("--to-end", action="store_true",
                   help="a script given no --steps / --duration: run it to its own end once a "
                   "variant, as tuimon did before --until-known (a two-hour script holds the machine "
                   "for four)")


def _how_scheduled(p: Parser) -> None:
    """How the variants share the machine: the schedule, turns, load, processes."""
    p.add_argument("--schedule", choices=("sequential", "interleave", "parallel"),
                   default="interleave",
                   help="interleave: variants take turns of --turn seconds, so drift and other "
                   "jobs hit all alike (default; every variant's process is alive at once); "
                   "sequential: one variant after the other (one model in memory at a time); "
                   "parallel: all at once")
    p.add_argument("--turn", type=limited("turn"), default=TURN_S, metavar="SECONDS",
                   help="seconds of stepping per turn with --schedule interleave, counted from the "
                   "turn's first step, compiles aside; at most a quarter of --steps / --duration, "
                   f"so every variant gets 4 turns or more (default: {TURN_S:g})")
    p.add_argument("--turn-steps", type=limited("turn-steps"), metavar="N",
                   help="steps per turn instead of --turn seconds")
    p.add_argument("--quiet-only", action="store_true",
                   help="keep steps measured while other processes loaded the machine (more than "
                   "half a core, or on the run's GPU) out of the steady state, and count them")
    p.add_argument("--pin-malloc", action=argparse.BooleanOptionalAction, default=False,
                   help="fix glibc malloc's mmap and trim thresholds alike in every run "
                   "(MALLOC_MMAP_THRESHOLD_=256 MiB, MALLOC_TRIM_THRESHOLD_=1 GiB), so no run "
                   "page-faults its buffers in again at every step by the luck of its allocation "
                   "history: the variants compare more alike, but a process that never faults "
                   "reads faster than your own training would run (default: off: the allocator "
                   "as your process has it)")
    p.add_argument("--repeats", type=limited("repeats"), default=None, metavar="K",
                   help="run each variant in K separate processes, in rounds: round 1's runs the "
                   "whole --steps / --duration (so what a script does late in its run is reached), "
                   "rounds 2..K a K-th of it each; the spread between processes goes into every "
                   "interval "
                   f"(default: {AUTO_REPEATS} when tuimon sets the runs' length: a recipe, or a script "
                   "with --steps / --duration; 1 with --to-end; not with --until-known, whose "
                   "rounds go on until the answer is known)")
    p.add_argument("--nproc", type=limited("nproc"), metavar="N",
                   help="run each variant as N ranks under torchrun (DDP: gloo on the CPU, nccl on "
                   "CUDA, one GPU per rank), each on its shard of the batches")


def _the_answer(p: Parser) -> None:
    """What the verdict weighs: axes, the horizon, the loss tolerance."""
    p.add_argument("--set", type=key_value, action="append", default=[], metavar="KEY=VALUE",
                   help="a knob: a recipe reads it as cfg.extra[KEY], a script gets it where its "
                   "command says {KEY}, else as the environment variable KEY (repeatable); "
                   "KEY=a,b,c is an axis: one variant per value, the first the baseline")
    p.add_argument("--horizon", type=horizon_arg, metavar="STEPS|TIME",
                   help="how long you will really train (50000 steps, or 2h with eager/fp32): the "
                   "verdict then picks the least total time over it, compile included")
    p.add_argument("--loss-tolerance", type=limited("loss-tolerance"), metavar="SHARE",
                   help="the verdict disqualifies a variant whose losses end further than this from "
                   "eager/fp32's, as a share of the first loss (default: 0.05)")


def _probes_and_store(p: Parser) -> None:
    """Probes, where sessions go, compile caches, the hang watch."""
    p.add_argument("--interval", type=limited("interval"), default=1.0, metavar="SECONDS",
                   help="how often CPU/GPU probes sample, in the supervisor (default: 1, min 0.2)")
    p.add_argument("--no-probes", action="store_true",
                   help="do not sample CPU/GPU metrics (to measure what the probes cost)")
    p.add_argument("--out", default=DEFAULT_OUT, metavar="DIR",
                   help="where session directories go (default: ./tuimon-sessions; under srun "
                   "DIR/slurm-JOB-STEP/NODE/, one directory the job's nodes share)")
    cache = p.add_mutually_exclusive_group()
    cache.add_argument("--warm-cache", action="store_true",
                       help=f"reuse the persistent Inductor cache {DEFAULT_CACHE} (warm compile)")
    cache.add_argument("--cache-dir", metavar="DIR",
                       help="reuse this Inductor cache directory (default: a fresh one per run, "
                       "so compile times are cold)")
    add_warm_flags(p)
    p.add_argument("--hang-timeout", type=limited("hang-timeout"), default=600.0, metavar="SECONDS",
                   help="warn when a started run sends no step for this long, compiling, paused "
                   "or waiting for its turn aside (default: 600)")


def _captures(p: Parser) -> None:
    """Captures and counts: torch's trace, profiler windows, FLOPs."""
    p.add_argument("--torch-trace", action="store_true",
                   help="also write torch's structured trace into SESSION/torch-trace/RUN/ "
                   "(open it with tlparse)")
    p.add_argument("--profile-at", type=limited("profile-at"), metavar="STEP",
                   help="capture a torch.profiler window in every run from step STEP (chrome traces "
                   "go to the session's profiles/)")
    p.add_argument("--profile-window", type=window_arg, default=PROFILE_WINDOW,
                   metavar="WAIT,WARMUP,ACTIVE", help="steps of a capture: skipped, recorded and "
                   f"dropped, kept (default: {window_text(PROFILE_WINDOW)})")
    p.add_argument("--profile-backward", nargs="?", const="eager", choices=("eager", "all"),
                   metavar="eager|all",
                   help="label each block's backward in captures: eager variants (default when "
                   "given), or all (compiled variants too: graph breaks and recompiles in the window)")
    p.add_argument("--no-auto-capture", action="store_true",
                   help="take no automatic diagnosis capture (by default each run without a "
                   "capture gets one short profiler window as its second turn begins, for the "
                   "'why' diagnosis)")
    p.add_argument("--no-flops", action="store_true",
                   help="count no FLOPs (by default each run counts one extra step's FLOPs, "
                   "outside its measured steps and undone after, for FLOP/s and MFU per phase)")


def _script_flags(p: Parser) -> None:
    """A script's: its compile, its files."""
    p.add_argument("--no-auto-compile", action="store_true",
                   help="script runs: do not compile the trained module of a script that never "
                   "calls torch.compile (its compiled variants then run as eager)")
    p.add_argument("--compile-module", metavar="NAME",
                   help="script runs: compile the first module called whose class is NAME "
                   "(e.g. RNNModel), instead of the module the optimizer trains")
    p.add_argument("--in-place", action="store_true",
                   help="script runs: run every variant in your working directory itself, as "
                   "before tuimon kept their files apart (variants then overwrite each other's "
                   "checkpoints and your own); by default each works in its own copy-on-write view "
                   "of it under the session directory")


def _view(p: Parser) -> None:
    """What comes after and how it is shown."""
    p.add_argument("--try", dest="then_try", action="store_true",
                   help="then race the fixes the session's findings call for, on its best "
                   "compiled variant (tuimon try SESSION; docs/try.md)")
    p.add_argument("--headless", action="store_true",
                   help="progress lines and a summary table instead of the TUI (also when "
                   "stdout is not a terminal)")
    p.add_argument("--fps", type=fps_arg, default=4.0,
                   help="TUI redraws per second (default: 4; 1-30)")
    p.add_argument("--detach", action="store_true",
                   help="start the session in the background and return at once; "
                   "'tuimon attach' opens the TUI on it")
    p.add_argument("--version", action="version", version=f"tuimon {__version__}")
