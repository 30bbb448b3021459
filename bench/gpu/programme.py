"""The GPU programme (issue 27), one stage a call: python3 bench/gpu/programme.py STAGE [options]

Started by ``bash bench/gpu/all.sh STAGE`` (set-up first, see bench/gpu/README.md). Runs the
stage's steps (bench/gpu/stages.py) one after the other, each under its own time limit and all
within ``--budget`` seconds, and leaves in ``--out`` (default $OUT):

    STAGE.json     every step: command, limit, exit code, wall time, what it measured (read by
                   bench/gpu/report.py); rewritten after each step, so a call cut short keeps
                   what it did
    STAGE.log      the tail of each step's output
    STAGE.tar.gz   the session directories (without their Inductor caches), JUnit reports,
                   JSON results and screenshots
    *.svg          the screenshots again, as files (stage extras)

``--dry-run`` runs every stage here, without a GPU: the steps marked to run do so on the CPU with
tiny sizes against a fake NVML (tests/fake_nvml), the others have their command checked (tuimon's
own argument parsers, the test ids, the scripts' flags) without running. ``plan`` prints what each
stage would run on this build (which steps wait for features not built yet).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path[:0] = [str(HERE), str(ROOT)]

import collect  # noqa: E402
import execute  # noqa: E402
from stages import CALL_DEFAULT_S, CALLS_S, ORDER, STAGES, Ctx, Step  # noqa: E402

FORMAT = "tuimon-gpu-programme/1"
PHASE_FIELD = re.compile(r"phase", re.IGNORECASE)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("stage", choices=[*ORDER, "all", "plan"])
    p.add_argument("--dry-run", action="store_true", help="CPU, tiny, fake NVML; check the rest")
    p.add_argument("--budget", type=float, default=560.0, help="seconds for the stage (default 560)")
    p.add_argument("--spent", type=float, default=0.0,
                   help="seconds the call has spent already (set-up): the stage's call cap less this "
                   "bounds --budget")
    p.add_argument("--out", default=os.environ.get("OUT") or "gpu-out", help="results (default $OUT)")
    p.add_argument("--work", default=None, help="scratch (default /tmp/tuimon-gpu)")
    a = p.parse_args(argv)
    work = Path(a.work or ("/tmp/tuimon-gpu-dry" if a.dry_run else "/tmp/tuimon-gpu")).resolve()
    out = Path(a.out).resolve()
    if a.stage == "plan":
        return plan(work, a.dry_run)
    out.mkdir(parents=True, exist_ok=True)
    code = 0
    for stage in ORDER if a.stage == "all" else [a.stage]:
        code = max(code, run_stage(stage, work, out, a.budget, a.dry_run, a.spent))
    return code


def stage_budget(stage: str, budget_s: float, spent_s: float = 0.0) -> float:
    """The stage's seconds: what was asked, within its call's cap less what set-up spent."""
    return min(budget_s, CALLS_S.get(stage, CALL_DEFAULT_S) - spent_s)


def run_stage(stage: str, work: Path, out: Path, budget_s: float, dry: bool, spent_s: float = 0.0) -> int:
    make, what, _ = STAGES[stage]
    ctx = Ctx(ROOT, work, sys.executable, stage, dry)
    budget_s = stage_budget(stage, budget_s, spent_s)
    start, deadline = time.monotonic(), time.monotonic() + budget_s
    env = step_env(dry)
    doc = {"format": FORMAT, "stage": stage, "what": what, "dry_run": dry, "budget_s": budget_s,
           "call_s": CALLS_S.get(stage, CALL_DEFAULT_S), "setup_s": spent_s,
           "started": datetime.now(timezone.utc).isoformat(timespec="seconds"), "commit": commit(),
           "python": sys.executable, "facts": {}, "steps": []}
    keep: list[Path] = []
    logs = work / "logs" / stage
    out.mkdir(parents=True, exist_ok=True)
    print(f"== stage {stage}: {what} (budget {budget_s:.0f} s){' — DRY RUN' if dry else ''}", flush=True)
    for step in make(ctx):
        res, paths = one_step(step, ctx, env, deadline, logs / f"{step.name}.log")
        keep += paths
        doc["steps"].append(res)
        doc["facts"] = read_facts(work)
        print(f"  {step.name:<16} {res['status']:<60.60} {res.get('wall_s', 0):7.1f} s", flush=True)
        execute.write_text(out / f"{stage}.json", json.dumps(doc, indent=1, default=str) + "\n")
    doc["wall_s"] = round(time.monotonic() - start, 1)
    doc["packed"] = pack(stage, out, work, keep, logs, doc)
    doc["ended"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
    execute.write_text(out / f"{stage}.json", json.dumps(doc, indent=1, default=str) + "\n")
    problems = execute.out_ok(out) if len(list(out.glob("*.json"))) == 1 else []
    for line in problems:
        print(f"  $OUT: {line}", flush=True)
    print(f"== stage {stage}: {doc['wall_s']:.0f} s; results in {out}", flush=True)
    return 1 if problems or any(s["status"].startswith(("failed", "timed out", "check failed"))
                                for s in doc["steps"]) else 0


def one_step(step: Step, ctx: Ctx, env: dict, deadline: float, log: Path) -> tuple[dict, list[Path]]:
    res = {"name": step.name, "what": step.what, "argv": step.argv, "timeout_s": step.timeout_s}
    unmet = needs(step.needs, ctx)
    if unmet:
        res["status"] = f"skipped: {unmet}"
        if step.needs == "no-facts":  # the facts of this machine, read by an earlier stage
            res["result"], _ = collect.read("json", step, ctx.work, ctx.py)
        return res, []
    if ctx.dry and step.dry == "check":
        problem = check_command(step.argv)
        res["status"] = f"check failed: {problem}" if problem else "checked (dry run: not run)"
        return res, []
    left = deadline - time.monotonic() - execute.GRACE_S[0] - 20
    # what it leaves for the steps after it gives way before the step itself would be cut
    limit = min(step.timeout_s, left, max(left - step.leave_s, step.min_s))
    if limit < step.min_s:
        res["status"] = (f"skipped: the stage's budget is spent ({max(left, 0):.0f} s left, "
                         f"needs {step.min_s:.0f} s)")
        return res, []
    planned = step.sized(limit) if step.sized else step.argv
    argv = step.dry_argv if ctx.dry and step.dry_argv else planned
    res.update(argv=argv, limit_s=round(limit, 1), left_s=round(left, 1), dry=ctx.dry)
    if step.sized:
        res["sized_argv"] = planned  # the dry run runs its stand-in: the sized command checked
        problem = check_command(planned) if ctx.dry else None
        if problem:
            res["status"] = f"check failed: {problem}"
            return res, []
    fresh(step)
    got = execute.run(argv, timeout_s=limit, log=log, env={**env, **step.env}, cwd=ROOT,
                      stdout_to=step.stdout_to)
    res.update(got)
    rc = got.get("rc")
    res["status"] = (f"timed out after {limit:.0f} s (stopped with {', '.join(got['signals'])})"
                     if got.get("timed_out") else "ok" if rc in step.ok_codes
                     else f"failed: exit {rc}{' ' + got['error'] if got.get('error') else ''}")
    res["log_tail"] = execute.tail(log, 3000)
    res["result"], paths = collect.read(step.collect, step, ctx.work, ctx.py)
    return res, [*paths, log]


def fresh(step: Step) -> None:
    """What an earlier run of the step left on this (warm) machine goes first: its result is
    then this run's or none, never an old one read as new."""
    out = collect.out_dir(step.argv)
    for path in (out, step.artifact, step.stdout_to):
        if path is None:
            continue
        if path.is_dir():
            shutil.rmtree(path)
        elif path.exists():
            path.unlink()
    for path in (out, step.artifact if step.artifact and step.artifact.suffix == "" else None):
        if path is not None:
            path.mkdir(parents=True, exist_ok=True)
    for path in (step.artifact, step.stdout_to):
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)


def needs(what: str, ctx: Ctx) -> str | None:
    """None when the step can run, else why not (one line)."""
    if what == "always":
        return None
    if what == "no-facts":
        return "this machine's facts are at hand (an earlier stage read them)" \
            if (ctx.work / "facts.json").is_file() else None
    if what == "gpus>=2":
        n = (read_facts(ctx.work).get("torch") or {}).get("device_count") or 0
        return None if n >= 2 else f"this machine has {n} CUDA GPU(s): a 2-rank nccl job needs two"
    if what == "feature:warm":
        from tuimon.cli.run_flags import run_parser

        return None if "--warm" in run_parser()._option_string_actions else \
            "not available in this build (tuimon has no --warm yet: issue 26)"
    latest = latest_summary(ctx.work)
    if what == "no-session":
        return f"a session of this machine tells already ({latest.parent.name})" if latest else None
    if what == "feature:phases":
        if latest is None:
            return "no session here to tell whether this build writes phases"
        from tuimon.report import schema

        fields = phase_fields(schema.read(latest))
        return None if fields else \
            f"not available in this build (no phase fields in {latest.parent.name}/summary.json: issue 25)"
    raise ValueError(f"unknown need {what!r}")


def phase_fields(summary: dict) -> list[str]:
    """The step-phase fields of issue 25 in a summary.json (compile phases are another thing)."""
    keys = {k for r in summary.get("runs") or [] for k in collect.flat(r)} | set(summary)
    return sorted(k for k in keys if PHASE_FIELD.search(k) and k != "compile_phases")


def latest_summary(work: Path) -> Path | None:
    found = sorted((work / "sessions").glob("*/*/*/summary.json"), key=lambda p: p.stat().st_mtime)
    return found[-1] if found else None


def read_facts(work: Path) -> dict:
    with contextlib.suppress(OSError, ValueError):
        return json.loads((work / "facts.json").read_text(encoding="utf-8"))
    return {}


def step_env(dry: bool) -> dict[str, str]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "COLUMNS": "200"}
    path = [str(ROOT), *filter(None, env.get("PYTHONPATH", "").split(os.pathsep))]
    if dry:  # a fake NVML first on the path: tuimon's probes and doctor read one fake H100
        path.insert(0, str(ROOT / "tests/fake_nvml"))
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(path))
    return env


def pack(stage: str, out: Path, work: Path, keep: list[Path], logs: Path, doc: dict) -> dict:
    log_text = "".join(f"\n===== {s['name']}: {s['status']}\n{execute.tail(logs / (s['name'] + '.log'))}"
                       for s in doc["steps"] if (logs / f"{s['name']}.log").is_file())
    execute.write_text(out / f"{stage}.log", log_text)
    packed = execute.pack(out / f"{stage}.tar.gz", keep, work)
    svgs = [p for p in keep if p.suffix == ".svg"]
    room = execute.MAX_FILES - 3
    for svg in svgs[:room]:
        shutil.copyfile(svg, out / svg.name)
    packed["svg_files"] = [s.name for s in svgs[:room]]
    return packed


def commit() -> str | None:
    """The commit measured: $GPU_COMMIT (the device tool's copy has no .git), else git's."""
    if os.environ.get("GPU_COMMIT"):
        return os.environ["GPU_COMMIT"]
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        got = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True, timeout=10)
        return got.stdout.strip() or None
    return None


def check_command(argv: list[str]) -> str | None:
    """Why the command would not start as written (None: it would), without running it."""
    if argv[1:3] == ["-m", "tuimon"]:
        return check_tuimon(argv[3:])
    if argv[1:3] == ["-m", "pytest"]:
        return check_pytest(argv[3:])
    script = Path(argv[1])
    if script.suffix == ".py":
        if not script.is_file():
            return f"{script} does not exist"
        source = script.read_text(encoding="utf-8")
        missing = [a for a in argv[2:] if a.startswith("--") and f'"{a}"' not in source]
        return f"{script.name} has no {', '.join(missing)}" if missing else None
    return f"not a command this programme knows how to check: {argv[:2]}"


def check_tuimon(args: list[str]) -> str | None:
    from tuimon.cli import run_parser
    from tuimon.cli.args import UsageError
    from tuimon.cli.doctor import doctor_parser
    from tuimon.cli.script import split_run

    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            if args[:1] == ["doctor"]:
                doctor_parser().parse_args(args[1:])
                return None
            options, command = split_run(args[1:]) if args[:1] == ["run"] else (args, None)
            parsed = run_parser().parse_args(options)
    except (SystemExit, UsageError) as exc:
        return (err.getvalue().strip().splitlines() or [str(exc)])[-1]
    recipe = getattr(parsed, "recipe", None)
    if recipe and not Path(recipe).is_file():
        return f"recipe {recipe} does not exist"
    if command:
        script = next((Path(a) for a in command[1:] if a.endswith(".py")), None)
        if script is not None and not script.is_file():
            return f"script {script} does not exist"
    return None


def check_pytest(args: list[str]) -> str | None:
    for a in args:
        if not a.startswith("tests/"):
            continue
        path, _, name = a.partition("::")
        if not (ROOT / path).is_file():
            return f"{path} does not exist"
        if name and f"def {name}(" not in (ROOT / path).read_text(encoding="utf-8"):
            return f"{path} has no test {name}"
    return None


def plan(work: Path, dry: bool) -> int:
    for stage in ORDER:
        make, what, expected = STAGES[stage]
        ctx = Ctx(ROOT, work, sys.executable, stage, dry)
        print(f"{stage} (~{expected / 60:.0f} min): {what}")
        for step in make(ctx):
            unmet = needs(step.needs, ctx) if step.needs == "feature:warm" else None
            note = (f"  [skipped: {unmet}]" if unmet else "  [if a session's summary.json has phase "
                    "fields]" if step.needs == "feature:phases" else "  [with 2 GPUs]"
                    if step.needs == "gpus>=2" else f"  [sized to the time left, {step.leave_s:.0f} s "
                    "kept for the steps after it]" if step.sized else "")
            print(f"  {step.name:<16} ≤ {step.timeout_s:4.0f} s  {step.what}{note}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
