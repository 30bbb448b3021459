"""``tuimon [RECIPE] [options]``: check every input, then run a session (headless here, or through
a daemon with the TUI as its client) and print its summary."""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import signal
import socket
import sys
from dataclasses import replace
from importlib import metadata
from pathlib import Path

from tuimon import __version__, fixes
from tuimon.axes import parse_sets
from tuimon.cli.args import (
    DEFAULT_CACHE,
    UsageError,
)
from tuimon.cli.jobs import check_jobs
from tuimon.cli.known import across_nodes, until_known
from tuimon.cli.known import note as known_note
from tuimon.cli.script import script_hooks, script_program
from tuimon.cli.warm import here_facts, warm_settings
from tuimon.envvars import PIN_MALLOC
from tuimon.exit_codes import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, EXIT_STORE, EXIT_USAGE
from tuimon.lengths import covered
from tuimon.recipe import RecipeError, check_recipe_file
from tuimon.settings import (
    AUTO_REPEATS,
    PROFILE_BACKWARD,
    Length,
    Profiling,
    Program,
    RunSettings,
    ScriptHooks,
    window_text,
)
from tuimon.variants import PRECISIONS, SCRIPT, parse_list, parse_modes, product

DEMO = Path(__file__).parent.parent / "demo_recipe.py"  # tuimon/demo_recipe.py
MAX_PROCESSES = 64  # runs in one session (variants x repeats): all alive at once under interleave


def run_command(args: argparse.Namespace, argv: list[str], command: list[str] | None = None,
                prepare=None) -> int:
    """A session: the recipe's (or the demo's), or with ``command`` the user's own script.
    ``prepare(args, variants, answer, recipe, script, cache)`` (tuimon sweep) returns the variants to
    run and the budget's deadline, having sized --duration and noted what it skipped."""
    spec = until_known(args, command, sweep=prepare is not None)  # before --repeats is set
    modes, precisions, fixed, axes, script, recipe = checked_inputs(args, argv, command)
    spec = across_nodes(args, script, spec)
    cache_dir = checked_cache(args, script)
    warm = warm_settings(args, cache_dir)

    from rich.console import Console

    from tuimon.control.supervisor import Plan

    variants = product(modes, precisions, axes)
    answer = {"axes": axes, "horizon": args.horizon, "loss_tolerance": args.loss_tolerance,
              "start": args.start}
    answer = {key: value for key, value in answer.items() if value}
    deadline = None
    if spec is not None:  # its budget counts stepping (control/until_known.py)
        answer["until_known"], deadline = spec, spec["budget_s"]
        print(f"tuimon: note: {known_note(spec)}", file=sys.stderr)
    if prepare is not None:  # tuimon sweep: what cannot run here is skipped, the budget shared
        variants, sized = prepare(args, variants, answer, recipe, script, cache_text(cache_dir))
        deadline = sized if spec is None else deadline
    if deadline is None and (text := covered(args.steps, args.duration, args.repeats)):
        print(f"tuimon: note: {text}", file=sys.stderr)
    if len(variants) * args.repeats > MAX_PROCESSES:
        raise UsageError(f"{len(variants)} variants × {args.repeats} repeats = "
                         f"{len(variants) * args.repeats} runs: at most {MAX_PROCESSES} in a "
                         "session (interleaved, every one holds its model at once); give fewer "
                         "--modes, --precision or --set values")
    settings = run_settings(args, script or Program(recipe=str(recipe)), fixed,
                            len(variants) * args.repeats, until=spec is not None)
    store = new_session(args, argv, script, recipe, variants, cache_dir, warm, settings)
    interval = None if args.no_probes else args.interval
    plan = Plan(settings, variants, args.schedule, cache_dir, interval=interval,
                torch_trace=args.torch_trace, turn_steps=args.turn_steps, turn_s=args.turn,
                quiet_only=args.quiet_only, hang_s=args.hang_timeout,
                env=dict(PIN_MALLOC) if args.pin_malloc else {}, answer=answer,
                deadline_s=deadline, warm=warm)
    console = Console()
    if use_tui(args) or args.detach:  # the runs go to a daemon; the TUI is its client
        from tuimon.analysis import load_session
        from tuimon.cli.detached import run_detached
        from tuimon.report import export

        store.close()
        ended = run_detached(store.path, plan, fps=args.fps, tui=not args.detach, console=console)
        if isinstance(ended, int):  # detached: the daemon owns the session and its summary
            return ended
        status, supervisor, _ = ended  # the daemon has written meta.json and the summary
        _, _, summary = load_session(store.path)
        written = {fmt: store.path / name for fmt, name in export.FORMATS.items()}
    else:
        ran = run_headless(args, store, plan, variants, script, console)
        if isinstance(ran, int):
            return ran
        status, supervisor, summary, written = ran
    return ended_with(args, console, store, status, supervisor, summary, written, script, recipe)


def checked_inputs(args: argparse.Namespace, argv: list[str], command: list[str] | None):
    """The session's inputs, each checked (a bad one: one line, exit 2): (modes, precisions, the
    fixed --set knobs, the axes, a script's Program or None, the recipe's or script's path)."""
    try:
        modes = parse_modes(args.modes, args.compile_optimizer)
        precisions = parse_list(args.precision, PRECISIONS, "precision")
        fixed, axes = parse_sets(args.set)
        fixed, axes = fix_axis(fixed, axes)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if args.detach and args.headless:
        raise UsageError("--detach and --headless do not go together (--detach runs in the background)")
    share_processes(args, command)
    script = None  # a script's Program: what runs, checked
    if command is None and args.compile_module is not None:
        raise UsageError("--compile-module is a script option: a recipe's compiled variants "
                         "compile the model its build() returns")
    if command is not None:
        if args.recipe is not None:
            raise UsageError(f"give a recipe or a command after --, not both ({args.recipe})")
        script = script_program(args, command, fixed, axes)
        precisions = [SCRIPT]
    for note in check_jobs(args, argv[:argv.index("--")] if "--" in argv else argv, script):
        print(f"tuimon: note: {note}", file=sys.stderr)
    if script is not None and command is not None:
        recipe = Path(script.script or command[0])
    elif args.recipe is None:
        recipe = DEMO
    else:
        try:
            recipe = check_recipe_file(args.recipe)
        except RecipeError as exc:
            raise UsageError(str(exc)) from None
    return modes, precisions, fixed, axes, script, recipe


def checked_cache(args: argparse.Namespace, script: Program | None) -> Path | None:
    """The Inductor cache the runs share (None: a fresh one each), made and checked."""
    cache_dir = DEFAULT_CACHE if args.warm_cache else (Path(args.cache_dir) if args.cache_dir else None)
    if cache_dir is None:
        return None
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"cannot use cache directory {cache_dir}: {exc.strerror or exc}") from None
    if script is not None and not args.in_place and cache_dir.resolve() == Path.cwd().resolve():
        # each variant's writes in the working directory go to its own view, Inductor's C++
        # builds to the real path: one directory cannot be both (runner/script/files.py)
        raise UsageError("--cache-dir is the working directory, whose files tuimon keeps apart "
                         "for each variant: give the compile cache a directory of its own "
                         "(e.g. --cache-dir .tuimon-cache)")
    return cache_dir


def new_session(args, argv, script, recipe, variants, cache_dir, warm, settings):
    """The session's directory and its meta.json, written before anything is launched."""
    from tuimon.sessiondir.store import SessionStore, StoreError

    name = script.name if script else ("demo" if args.recipe is None else recipe.stem)
    task = getattr(args, "slurm", None)  # under srun: the job's directory, one session a node
    try:
        store = SessionStore.create(args.out, name, place=task.place if task else None)
    except StoreError as exc:
        raise UsageError(str(exc)) from None
    meta = session_meta(args, argv, task.place if task else store.path.name, recipe, variants, cache_dir)
    meta["run_settings"] = settings.to_dict()  # as every run's child gets it (its own fields aside)
    if task is not None:
        meta["slurm"] = task.to_dict()  # what a reader of the job's directory checks (merge.py)
        print(f"tuimon: note: {srun_note(task, store.path)}", file=sys.stderr)
    if script is not None:
        meta["command"] = list(script.command)
    # the recipe's hash; the last session's artifacts by default (a second session starts warm)
    here_facts(meta, recipe, warm, Path(args.out), store.path,
               reuse=cache_dir is None and not (args.warm or args.cold))
    try:
        store.write_meta(meta)
    except OSError as exc:  # a disk full already: nothing is launched
        store.close()
        raise UsageError(f"cannot write sessions to {args.out}: {exc.strerror or exc}") from None
    return store


def srun_note(task, path: Path) -> str:
    """Where a node's session went under srun, and how to read the whole job."""
    return (f"Slurm job {task.job_id} step {task.step_id}, node {task.node_id} of {task.nodes} "
            f"({task.node_name or 'no SLURMD_NODENAME'}): this node's session is {path}; read the "
            f"whole job with 'tuimon summary {path.parent}'")


def run_headless(args, store, plan, variants, script, console):
    """The session run here, its progress as rows: (status, supervisor, summary, written), or
    an exit code when its summary could not be written."""
    from tuimon.control.supervisor import Supervisor, interrupt
    from tuimon.headless import HeadlessView
    from tuimon.report import export
    from tuimon.sessiondir.store import StoreWriteError

    view = HeadlessView({v.run_id: v.label for v in variants}, args.steps, console)
    if args.recipe is None and script is None:
        console.print("tuimon demo: a small MLP, eager vs torch.compile "
                      "(run 'tuimon RECIPE' for your own model)", highlight=False)
    supervisor = Supervisor(store, plan, warn_on_stderr(view))
    console.print(f"session: {store.path}", highlight=False)
    # `kill PID` stops the runs as Ctrl-C does (by default it would orphan them: a hung one
    # never reads the EOF on its control pipe), then the summary is written undisturbed.
    previous = signal.signal(signal.SIGTERM, interrupt)
    with view:
        status = supervisor.run()
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    stored = store.close(read_back=True)
    try:
        _, summary, written = export.finish(store.path, status, stored=stored,
                                            unwritten=store.unwritten, error=supervisor.store_error)
    except StoreWriteError as exc:  # the runs ended; only the summary files did not fit
        print(f"tuimon: error: {exc} — the runs have ended; events.jsonl holds everything "
              f"measured ('tuimon summary {store.path}' once there is room)", file=sys.stderr)
        return EXIT_STORE
    signal.signal(signal.SIGTERM, previous)
    return status, supervisor, summary, written


def ended_with(args, console, store, status, supervisor, summary, written, script, recipe) -> int:
    """The session's end on the terminal (its summary, a failure's one line) and its exit code."""
    from tuimon.headless import print_summary

    if getattr(supervisor, "store_error", None):
        print_summary(console, summary)
        kept = f"; summary in {written['md']}" if "md" in written and written["md"].is_file() else ""
        print(f"tuimon: error: {supervisor.store_error} — runs stopped; what was written so far "
              f"is kept{kept}", file=sys.stderr)
        return EXIT_STORE
    if supervisor.build_failure is not None:
        e = supervisor.build_failure
        if e.get("error") in ("RecipeError", "SetupError", "ScriptExit", "HookError"):  # a sentence
            line = e.get("message")
        else:
            where = f" at {e['where']}" if e.get("where") else ""
            what = f"script {recipe.name}" if script else f"recipe {args.recipe or recipe}"
            line = (f"{what} raised {'before its first step' if script else 'while building'}"
                    f"{where}: {e.get('error')}: {e.get('message')}")
        print(f"tuimon: error: {line} (log: {store.log_path(e['run'])})", file=sys.stderr)
        return EXIT_USAGE
    print_summary(console, summary)
    console.print(f"summary: {written['md']}  (also {written['json'].name}, "
                  f"{written['csv'].name}; logs in {store.path / 'logs'})", highlight=False)
    if status == "interrupted":
        return EXIT_INTERRUPTED
    if status == "failed":
        return EXIT_FAILED
    if getattr(args, "then_try", False):  # --try: its fixes raced next (cli/try_fixes.py)
        from tuimon.cli.try_fixes import try_after

        return try_after(store.path, headless=not use_tui(args))
    return EXIT_OK


def share_processes(args: argparse.Namespace, command: list[str] | None) -> None:
    """--repeats when not given: several processes a variant whenever tuimon sets the runs'
    length, one for a script that runs to its own end (K of those would run it K times). Round
    1's process runs the whole --steps / --duration; rounds 2..K a K-th of it (tuimon/lengths.py)."""
    if args.repeats is None:
        length_set = command is None or args.steps or args.duration or getattr(args, "budget", None)
        args.repeats = AUTO_REPEATS if length_set else 1


def warn_on_stderr(sink):
    """Headless: a recreated session directory is said on stderr too, where a log keeps it."""
    def record(batch: list[dict]) -> None:
        for e in batch:
            if e.get("type") == "warning" and e.get("store"):
                print(f"tuimon: warning: {e.get('text')}", file=sys.stderr, flush=True)
        sink(batch)
    return record


def use_tui(args: argparse.Namespace) -> bool:
    """The TUI on an interactive terminal; the headless display otherwise (CI, pipes, logs)."""
    return not args.headless and sys.stdin.isatty() and sys.stdout.isatty()


def fix_axis(fixed: dict[str, str], axes: dict[str, list[str]]):
    """``--set fix=...`` names tuimon try's fixes (tuimon/fixes.py): always an axis (one value:
    every variant gets it), never a knob the recipe or script reads. ValueError: no such fix."""
    if fixes.AXIS in fixed:
        fixed = dict(fixed)
        axes = {fixes.AXIS: [fixed.pop(fixes.AXIS)], **axes}
    for value in axes.get(fixes.AXIS, []):
        fixes.parse(value)
    return fixed, axes


def run_settings(args: argparse.Namespace, program: Program, fixed: dict[str, str],
                 runs: int, until: bool = False) -> RunSettings:
    """Every run's settings, built once (tuimon/settings.py); the supervisor adds each run's own
    (its id, variant, round, turns). ``runs``: the session's processes; ``until``: --until-known
    (each process runs until the supervisor stops it)."""
    nproc = getattr(args, "nproc", None)
    if nproc:  # a recipe as N ranks under torchrun
        program = replace(program, launcher="torchrun", nproc=nproc)
    return RunSettings(
        program=program, knobs=tuple(fixed.items()), warmup=str(args.warmup), seed=args.seed,
        device=args.device, batch_size=args.batch_size, image_size=args.image_size,
        # The whole length: round 1's; rounds 2..K a K-th of it (tuimon/lengths.py).
        length=Length(steps=args.steps, duration=args.duration, repeats=args.repeats,
                      steady_duration=bool(getattr(args, "steady_duration", False)),
                      until_known=until),
        profile=Profiling(profile_at=args.profile_at, profile_window=args.profile_window,
                          profile_backward=args.profile_backward or PROFILE_BACKWARD,
                          auto_profile=not args.no_auto_capture,
                          count_flops=not getattr(args, "no_flops", False)),
        hooks=script_hooks(args, args.schedule, runs) if program.is_script else ScriptHooks())


def session_meta(args, argv, name, recipe, variants, cache_dir) -> dict:
    def version(pkg: str) -> str | None:
        try:
            return metadata.version(pkg)
        except metadata.PackageNotFoundError:
            return None

    settings = {k: getattr(args, k) for k in (
        "steps", "duration", "warmup", "batch_size", "image_size", "seed", "device", "schedule",
        "turn", "turn_steps", "quiet_only", "pin_malloc", "repeats", "set", "nproc", "interval",
        "horizon", "loss_tolerance", "no_probes", "fps", "torch_trace", "profile_at",
        "profile_window", "profile_backward", "no_auto_capture", "warm", "cold", "cache_from",
        "warm_from", "start", "until_known", "budget", "margin", "to_end")}
    settings["profile_window"] = window_text(args.profile_window)  # as older sessions wrote it
    return {
        "name": name,
        "tuimon": __version__,
        "argv": ["tuimon", *argv],
        "cwd": os.getcwd(),
        "recipe": str(recipe),
        "variants": [{"run": v.run_id, **v.fields()} for v in variants],
        "settings": settings,  # the flags as given (the runs' own: "run_settings")
        "cache": cache_text(cache_dir),
        "host": socket.gethostname(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "torch": version("torch"),
        "triton": version("triton"),
        "torchvision": version("torchvision"),
        "timm": version("timm"),
        "started": now_iso(),
        "status": "running",
        "owner": owner_info("cli"),  # the process that runs the supervisor (a daemon replaces it)
    }


def cache_text(cache_dir: Path | None) -> str:
    return f"persistent {cache_dir} (may be warm)" if cache_dir else "fresh per run (cold compile)"


def owner_info(kind: str) -> dict:
    from tuimon.sessiondir.listing import owner_info

    return owner_info(kind)


def now_iso() -> str:
    return datetime.datetime.now().astimezone().isoformat(timespec="seconds")
