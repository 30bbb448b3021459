"""Command line: ``tuimon [RECIPE] [options]`` runs a session; ``tuimon summary DIR`` exports.

Every input is checked before anything is launched; a bad one gets one line on stderr and
exit code 2, never a traceback.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import re
import signal
import socket
import sys
from importlib import metadata
from pathlib import Path

from tuimon import __version__
from tuimon.recipe import RecipeError, check_recipe_file
from tuimon.variants import MODES, PRECISIONS, parse_list, product

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130
DEMO = Path(__file__).with_name("demo_recipe.py")
DEFAULT_CACHE = Path.home() / ".cache" / "tuimon" / "inductor"


class UsageError(Exception):
    """Bad input: printed as one line, exit 2."""


class Parser(argparse.ArgumentParser):
    def error(self, message: str):  # argparse prints usage + message; we want one line
        raise UsageError(message)


def _interrupt(signum, frame) -> None:
    raise KeyboardInterrupt

def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be positive, got {value}")
    return value


def step_index(text: str) -> int:
    return positive_int(text) if text.strip() != "0" else 0


def warmup_arg(text: str) -> str:
    """'auto' (found in the data) or a fixed number of steps, kept as text for the runner."""
    if text == "auto":
        return text
    return str(step_index(text))


def positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds, got {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be positive, got {text}")
    return value


def interval_arg(text: str) -> float:
    value = positive_float(text)
    if value < 0.2:
        raise argparse.ArgumentTypeError(f"must be at least 0.2 s, got {text}")
    return value


def fps_arg(text: str) -> float:
    value = positive_float(text)
    if not 1 <= value <= 30:
        raise argparse.ArgumentTypeError(f"must be between 1 and 30, got {text}")
    return value


def device_arg(text: str) -> str:
    if not re.fullmatch(r"auto|cpu|cuda(:\d+)?", text):
        raise argparse.ArgumentTypeError(f"expected auto, cpu, cuda or cuda:N, got {text!r}")
    return text


def key_value(text: str) -> str:
    if not re.fullmatch(r"[A-Za-z_][\w.-]*=.*", text):
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return text


def window_arg(text: str) -> str:
    try:
        wait, warmup, active = (int(x) for x in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected WAIT,WARMUP,ACTIVE (three whole numbers), got {text!r}") from None
    if wait < 0 or warmup < 0 or active < 1:
        raise argparse.ArgumentTypeError(f"expected WAIT >= 0, WARMUP >= 0 and ACTIVE >= 1, got {text!r}")
    return f"{wait},{warmup},{active}"


def run_parser() -> Parser:
    p = Parser(
        prog="tuimon",
        description="Run a training recipe as eager and torch.compile variants, side by side, "
        "and export the eager-vs-compiled summary. With no RECIPE, runs a built-in demo.",
        epilog="Other commands: 'tuimon summary SESSION_DIR' re-exports a session's summary; "
        "'tuimon replay SESSION_DIR' opens the TUI on a recorded session; "
        "'tuimon attach [SESSION_DIR]' opens the TUI again on a session running in the background; "
        "'tuimon ls' lists sessions.",
    )
    p.add_argument("recipe", nargs="?", help="a recipe file (defines build(cfg)); default: demo")
    p.add_argument("--modes", default="eager,default",
                   help=f"comma list of compile modes: {', '.join(MODES)} (default: eager,default)")
    p.add_argument("--precision", default="fp32",
                   help="comma list of precisions: fp32, amp (autocast: bf16 on CPU; bf16 or "
                   "fp16+GradScaler on CUDA) (default: fp32)")
    p.add_argument("--steps", type=positive_int,
                   help="steps per variant (default: the recipe's, for its device)")
    p.add_argument("--duration", type=positive_float, metavar="SECONDS",
                   help="time limit per variant; with --steps, whichever comes first")
    p.add_argument("--warmup", type=warmup_arg, default="auto", metavar="STEPS|auto",
                   help="steps kept out of the steady state: 'auto' finds where step times settle "
                   "(MSER-5 on the step times), a number fixes it (default: auto)")
    p.add_argument("--batch-size", type=positive_int, help="override the recipe's batch size")
    p.add_argument("--image-size", type=positive_int, help="override the recipe's image size")
    p.add_argument("--seed", type=int, default=0, help="seed for model and data (default: 0)")
    p.add_argument("--device", type=device_arg, default="auto",
                   help="auto, cpu, cuda or cuda:N (default: auto = cuda when available)")
    p.add_argument("--schedule", choices=("sequential", "interleave", "parallel"),
                   default="sequential",
                   help="sequential: one variant after the other (default); interleave: variants "
                   "take turns of --turn-steps steps, so drift hits all alike; parallel: all at once")
    p.add_argument("--turn-steps", type=positive_int, default=50, metavar="N",
                   help="steps per turn with --schedule interleave (default: 50)")
    p.add_argument("--set", type=key_value, action="append", default=[], metavar="KEY=VALUE",
                   help="recipe-specific option, passed as cfg.extra (repeatable)")
    p.add_argument("--interval", type=interval_arg, default=1.0, metavar="SECONDS",
                   help="how often CPU/GPU probes sample, in the supervisor (default: 1, min 0.2)")
    p.add_argument("--no-probes", action="store_true",
                   help="do not sample CPU/GPU metrics (to measure what the probes cost)")
    p.add_argument("--out", default="tuimon-sessions", metavar="DIR",
                   help="where session directories go (default: ./tuimon-sessions)")
    cache = p.add_mutually_exclusive_group()
    cache.add_argument("--warm-cache", action="store_true",
                       help=f"reuse the persistent Inductor cache {DEFAULT_CACHE} (warm compile)")
    cache.add_argument("--cache-dir", metavar="DIR",
                       help="reuse this Inductor cache directory (default: a fresh one per run, "
                       "so compile times are cold)")
    p.add_argument("--hang-timeout", type=positive_float, default=600.0, metavar="SECONDS",
                   help="warn when a started run sends no step for this long, compiling, paused "
                   "or waiting for its turn aside (default: 600)")
    p.add_argument("--torch-trace", action="store_true",
                   help="also write torch's structured trace into SESSION/torch-trace/RUN/ "
                   "(open it with tlparse)")
    p.add_argument("--profile-at", type=step_index, metavar="STEP",
                   help="capture a torch.profiler window in every run from step STEP (chrome traces "
                   "go to the session's profiles/)")
    p.add_argument("--profile-window", type=window_arg, default="1,2,3", metavar="WAIT,WARMUP,ACTIVE",
                   help="steps of a capture: skipped, recorded and dropped, kept (default: 1,2,3)")
    p.add_argument("--profile-backward", nargs="?", const="eager", choices=("eager", "all"),
                   metavar="eager|all",
                   help="label each block's backward in captures: eager variants (default when "
                   "given), or all (compiled variants too: graph breaks and recompiles in the window)")
    p.add_argument("--headless", action="store_true",
                   help="progress lines and a summary table instead of the TUI (also when "
                   "stdout is not a terminal)")
    p.add_argument("--fps", type=fps_arg, default=4.0,
                   help="TUI redraws per second (default: 4; 1-30)")
    p.add_argument("--detach", action="store_true",
                   help="start the session in the background and return at once; "
                   "'tuimon attach' opens the TUI on it")
    p.add_argument("--version", action="version", version=f"tuimon {__version__}")
    return p


def summary_parser() -> Parser:
    p = Parser(prog="tuimon summary",
               description="Recompute a session's summary from its store and rewrite its exports.")
    p.add_argument("session", help="a session directory (contains events.jsonl)")
    p.add_argument("--format", choices=("md", "json", "csv"), default="md",
                   help="what to print on stdout (all three files are rewritten) (default: md)")
    return p


def replay_parser() -> Parser:
    p = Parser(prog="tuimon replay",
               description="Open the TUI on a recorded (or still running) session, read-only.")
    p.add_argument("session", help="a session directory (contains events.jsonl)")
    p.add_argument("--fps", type=fps_arg, default=4.0, help="redraws per second (default: 4)")
    return p


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if argv[:1] == ["summary"]:
            return summary_command(summary_parser().parse_args(argv[1:]))
        if argv[:1] == ["replay"]:
            return replay_command(replay_parser().parse_args(argv[1:]))
        if argv[:1] in (["attach"], ["ls"]):
            from tuimon import detach

            if argv[0] == "attach":
                return detach.attach_command(detach.attach_parser().parse_args(argv[1:]))
            return detach.ls_command(detach.ls_parser().parse_args(argv[1:]))
        return run_command(run_parser().parse_args(argv), argv)
    except UsageError as exc:
        print(f"tuimon: error: {exc}", file=sys.stderr)
        return EXIT_USAGE


def summary_command(args: argparse.Namespace) -> int:
    from tuimon.session import export, store

    if not store.is_session(args.session):
        raise UsageError(f"not a tuimon session directory (no events.jsonl): {args.session}")
    try:
        written = export.write_all(args.session)
    except OSError as exc:
        raise UsageError(f"cannot write the summary into {args.session}: {exc.strerror or exc}") from None
    sys.stdout.write(written[args.format].read_text(encoding="utf-8"))
    return EXIT_OK


def run_command(args: argparse.Namespace, argv: list[str]) -> int:
    try:
        modes = parse_list(args.modes, MODES, "mode")
        precisions = parse_list(args.precision, PRECISIONS, "precision")
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if args.detach and args.headless:
        raise UsageError("--detach and --headless do not go together (--detach runs in the background)")
    if args.recipe is None:
        recipe = DEMO
    else:
        try:
            recipe = check_recipe_file(args.recipe)
        except RecipeError as exc:
            raise UsageError(str(exc)) from None
    cache_dir = DEFAULT_CACHE if args.warm_cache else (Path(args.cache_dir) if args.cache_dir else None)
    if cache_dir is not None:
        try:
            cache_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UsageError(f"cannot use cache directory {cache_dir}: {exc.strerror or exc}") from None

    from rich.console import Console

    from tuimon.headless import HeadlessView, print_summary
    from tuimon.session import export
    from tuimon.session.store import SessionStore, StoreError
    from tuimon.session.supervisor import Plan, Supervisor

    variants = product(modes, precisions)
    name = "demo" if args.recipe is None else recipe.stem
    try:
        store = SessionStore.create(args.out, name)
    except StoreError as exc:
        raise UsageError(str(exc)) from None
    runner_args = runner_flags(args)
    meta = session_meta(args, argv, store.path.name, recipe, variants, cache_dir)
    store.write_meta(meta)

    interval = None if args.no_probes else args.interval
    plan = Plan(recipe, variants, args.schedule, runner_args, cache_dir, interval=interval,
                torch_trace=args.torch_trace, turn_steps=args.turn_steps, hang_s=args.hang_timeout)
    console = Console()
    if use_tui(args) or args.detach:  # the runs go to a daemon; the TUI is its client
        from tuimon.detach import run_detached

        store.close()
        ended = run_detached(store.path, plan, fps=args.fps, tui=not args.detach, console=console)
        if isinstance(ended, int):  # detached: the daemon owns the session and its summary
            return ended
        status, supervisor, _ = ended  # the daemon has written meta.json and the summary
        _, _, summary = export.load(store.path)
        written = {fmt: store.path / name for fmt, name in export.FORMATS.items()}
    else:
        view = HeadlessView({v.run_id: v.label for v in variants}, args.steps, console)
        if args.recipe is None:
            console.print("tuimon demo: a small MLP, eager vs torch.compile "
                          "(run 'tuimon RECIPE' for your own model)", highlight=False)
        supervisor = Supervisor(store, plan, view)
        console.print(f"session: {store.path}", highlight=False)
        # `kill PID` stops the runs as Ctrl-C does (by default it would orphan them: a hung one
        # never reads the EOF on its control pipe), then the summary is written undisturbed.
        previous = signal.signal(signal.SIGTERM, _interrupt)
        with view:
            status = supervisor.run()
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        store.close()
        _, summary, written = export.finish(store.path, status)
        signal.signal(signal.SIGTERM, previous)

    if supervisor.build_failure is not None:
        e = supervisor.build_failure
        if e.get("error") in ("RecipeError", "SetupError"):  # already a complete sentence
            line = e.get("message")
        else:
            where = f" at {e['where']}" if e.get("where") else ""
            line = (f"recipe {args.recipe or recipe} raised while building{where}: "
                    f"{e.get('error')}: {e.get('message')}")
        print(f"tuimon: error: {line} (log: {store.log_path(e['run'])})", file=sys.stderr)
        return EXIT_USAGE
    print_summary(console, summary)
    console.print(f"summary: {written['md']}  (also {written['json'].name}, "
                       f"{written['csv'].name}; logs in {store.path / 'logs'})", highlight=False)
    if status == "interrupted":
        return EXIT_INTERRUPTED
    return EXIT_FAILED if status == "failed" else EXIT_OK


def use_tui(args: argparse.Namespace) -> bool:
    """The TUI on an interactive terminal; the headless display otherwise (CI, pipes, logs)."""
    return not args.headless and sys.stdin.isatty() and sys.stdout.isatty()


def replay_command(args: argparse.Namespace) -> int:
    from tuimon.session import store
    from tuimon.ui.app import TuimonApp
    from tuimon.ui.sources import ReplaySource

    if not store.is_session(args.session):
        raise UsageError(f"not a tuimon session directory (no events.jsonl): {args.session}")
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise UsageError("replay needs an interactive terminal (use 'tuimon summary' for text)")
    TuimonApp(ReplaySource(args.session), fps=args.fps).run()
    return EXIT_OK


def runner_flags(args: argparse.Namespace) -> list[str]:
    flags = ["--device", args.device, "--seed", str(args.seed), "--warmup", str(args.warmup)]
    for opt in ("steps", "duration", "batch_size", "image_size"):
        value = getattr(args, opt)
        if value is not None:
            flags += ["--" + opt.replace("_", "-"), str(value)]
    for kv in args.set:
        flags += ["--set", kv]
    if args.profile_at is not None:
        flags += ["--profile-at", str(args.profile_at)]
    if args.profile_window != "1,2,3":
        flags += ["--profile-window", args.profile_window]
    if args.profile_backward:
        flags += ["--profile-backward", args.profile_backward]
    return flags


def session_meta(args, argv, name, recipe, variants, cache_dir) -> dict:
    def version(pkg: str) -> str | None:
        try:
            return metadata.version(pkg)
        except metadata.PackageNotFoundError:
            return None

    return {
        "name": name,
        "tuimon": __version__,
        "argv": ["tuimon", *argv],
        "cwd": os.getcwd(),
        "recipe": str(recipe),
        "variants": [{"run": v.run_id, "mode": v.mode, "precision": v.precision} for v in variants],
        "settings": {k: getattr(args, k) for k in ("steps", "duration", "warmup", "batch_size",
                                                  "image_size", "seed", "device", "schedule",
                                                  "turn_steps", "set", "interval", "no_probes", "fps",
                                                  "torch_trace", "profile_at", "profile_window",
                                                  "profile_backward")},
        "cache": f"persistent {cache_dir} (may be warm)" if cache_dir else "fresh per run (cold compile)",
        "host": socket.gethostname(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "torch": version("torch"),
        "torchvision": version("torchvision"),
        "timm": version("timm"),
        "started": now_iso(),
        "status": "running",
        "owner": owner_info("cli"),  # the process that runs the supervisor (a daemon replaces it)
    }


def owner_info(kind: str) -> dict:
    from tuimon.session.listing import owner_info

    return owner_info(kind)


def now_iso() -> str:
    return datetime.datetime.now().astimezone().isoformat(timespec="seconds")
