"""tuimon vs timm's benchmark.py vs torch.utils.benchmark.Timer on one step (issue 14); run by hand.

    .venv/bin/python bench/timm_agreement.py --benchmark /tmp/timm_benchmark.py [--rounds 4]
        [--also runner,tuimon-plain,tuimon-plain10]
    .venv/bin/python bench/timm_agreement.py --components [--steps 60]

The work: timm resnet18, random init, train mode, fp32, 96x96, batch 16, CPU, timm's "sgd"
(torch SGD, momentum 0.9, Nesterov, lr 1e-4), cross entropy over 1000 classes: the recipe is
bench/timm_resnet18_recipe.py, built to match what benchmark.py trains.

Default (three-way, across processes): ``--rounds`` rounds, each one fresh process of every
method, in an order that rotates from round to round (A B C, B C A, C A B, ...), so a machine that
other jobs slow down hits every method alike; the load average and the CPU pressure
(/proc/pressure/cpu) are printed beside every measurement.

- A, tuimon: ``python -m tuimon bench/timm_resnet18_recipe.py --headless --modes eager --steps 30
  --warmup 5 --no-probes``; the mean (and median) of steps 5-29 from the session's steps.csv;
- B, timm: benchmark.py ``--bench train --model resnet18 --img-size 96 -b 16 --device cpu
  --num-warm-iter 5 --num-bench-iter 25``, its ``train_step_time`` (the mean of its 25 timed
  steps). It is loaded as a module so that its clock can be recorded too: the median comes from
  the same perf_counter pairs its mean is made of;
- C, Timer: a fresh process builds the recipe as the runner does (seeded, train mode,
  tuimon.runner.trainer.Trainer) and times tuimon's timed region (next batch, ``Trainer.step``,
  ``float(loss)``) with ``torch.utils.benchmark.Timer(..., num_threads=torch.get_num_threads())``
  (Timer's default is ONE thread), ``timeit(25)`` after 3 steps by hand (timeit adds 2 of its
  own): the mean of steps 5-29.

Every process prints torch.get_num_threads() (tuimon's from its run_started event).

``--also`` adds methods to each round: ``runner`` (``python -m tuimon.runner`` alone, no supervisor
and no turns), ``tuimon-plain`` (the recipe with ``--set opt=plain``: SGD without momentum) and
``tuimon-plain10`` (plain SGD and a 10-class head): what a hand-written recipe may differ in.

benchmark.py is not in the timm wheel: take it from a clone of huggingface/pytorch-image-models
(measured with aa4b5850c1543fa488abf260f18390eda46cf85d: ``git show aa4b585:benchmark.py >
/tmp/timm_benchmark.py``). It needs timm importable from this interpreter (.venv has it) and
downloads nothing (random init).

``--components``: one process, the steps of several setups alternating step by step (separate
models, same seed), each timed with perf_counter: tuimon's timed region; benchmark.py's timed
region on the same work (zero_grad outside the clock, new targets inside it, one fixed input);
and the recipe choices a hand-written "resnet18 with SGD" recipe tends to make (plain SGD without
momentum, a 10-class head). Says what each part costs without any difference between processes.
"""

from __future__ import annotations

import argparse
import csv
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RECIPE = ROOT / "bench" / "timm_resnet18_recipe.py"
WARMUP, TIMED = 5, 25
# glibc's mmap threshold moves with what a process has freed so far, and memory freed at the top of
# the heap goes back to the kernel past the trim threshold; fixed, the same way in every process,
# freed memory stays in the process and a step faults no page in again.
PIN = "MALLOC_MMAP_THRESHOLD_=268435456 MALLOC_TRIM_THRESHOLD_=1073741824"
SIZE, BATCH = 96, 16


def minflt() -> int:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


# Put first on the PYTHONPATH of tuimon's processes (the supervisor hands its environment to the
# runner): wraps the runner's CPU step clock to count the minor page faults inside each step (one
# getrusage call at either end, ~1 µs against ~200 ms steps). Nothing in tuimon/ changes.
FAULTS_SITE = """
import atexit, json, os, resource
_out, _rec = os.environ["TIMM_AGREEMENT_FAULTS"], []
def _flt():
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt
try:
    import tuimon.runner.timing as _timing
    _start, _stop = _timing.CpuClock.start, _timing.CpuClock.stop
    def _started(self):
        self._faults0 = _flt()
        _start(self)
    def _stopped(self):
        _stop(self)
        _rec.append(_flt() - self._faults0)
    _timing.CpuClock.start, _timing.CpuClock.stop = _started, _stopped
except ImportError:
    pass
def _dump():
    if _rec:
        with open(_out, "a") as f:
            f.write(json.dumps(_rec) + "\\n")
atexit.register(_dump)
"""


def faults_env(out: Path) -> tuple[dict, Path]:
    site = out / "faults"
    site.mkdir(exist_ok=True)
    (site / "sitecustomize.py").write_text(FAULTS_SITE)
    record = Path(tempfile.mkstemp(prefix="faults-", suffix=".jsonl", dir=site)[1])
    path = os.pathsep.join(p for p in (str(site), os.environ.get("PYTHONPATH")) if p)
    return {**os.environ, "PYTHONPATH": path, "TIMM_AGREEMENT_FAULTS": str(record)}, record


def step_faults(record: Path) -> float:
    with open(record) as f:
        runners = [json.loads(line) for line in f]
    faults = max(runners, key=len)  # the runner that ran every step (tuimon's round 1)
    return statistics.median(faults[WARMUP:])


def machine_load() -> str:
    one, five, _ = os.getloadavg()
    try:
        some = Path("/proc/pressure/cpu").read_text().split("\n")[0].split()[1].split("=")[1]
        psi = f", cpu pressure avg10 {some} %"
    except (OSError, IndexError):
        psi = ""
    return f"load {one:.2f}/{five:.2f}{psi}"


# --- A: tuimon, the whole CLI ------------------------------------------------------------------

TUIMON_FLAGS: list[str] = []  # --tuimon-flags: more of tuimon's options (none: its defaults)


def run_tuimon(out: Path, sets: tuple[str, ...] = ()) -> dict:
    """tuimon at its defaults (probes on, 3 processes in rounds, the allocator as it is) but
    --modes eager: round 1's process runs all WARMUP + TIMED steps (tuimon/lengths.py), and its
    steps WARMUP.. are the ones timm times."""
    env, record = faults_env(out)
    out = out / "sessions"
    before = set(out.iterdir()) if out.exists() else set()
    cmd = [sys.executable, "-m", "tuimon", str(RECIPE), "--headless", "--modes", "eager",
           "--steps", str(WARMUP + TIMED), "--out", str(out), *TUIMON_FLAGS]
    for kv in sets:
        cmd += ["--set", kv]
    subprocess.run(cmd, cwd=ROOT, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   env=env)
    (session,) = set(out.iterdir()) - before
    with open(session / "steps.csv") as f:
        rows = list(csv.DictReader(f))
    first = rows[0]["run"]  # round 1's process (its run id has no round suffix)
    ms = [float(r["ms"]) for r in rows if r["run"] == first and int(r["i"]) >= WARMUP]
    threads = None
    with open(session / "events.jsonl") as f:
        for line in f:
            event = json.loads(line)
            if event.get("type") == "run_started":
                threads = event["threads"]
    assert len(ms) == TIMED, (session, len(ms))
    return {"mean": statistics.mean(ms), "median": statistics.median(ms), "threads": threads,
            "faults": step_faults(record), "where": str(session)}


def run_runner(out: Path) -> dict:
    """``python -m tuimon.runner`` alone: no supervisor beside it, no control pipe (so no turns)."""
    env, record = faults_env(out)
    events_path = Path(tempfile.mkstemp(prefix="runner-", suffix=".jsonl", dir=out)[1])
    with open(events_path, "w") as f:
        from tuimon.settings import RunSettings  # the supervisor's way: the settings in its env

        settings = RunSettings.make(recipe=str(RECIPE), run="bare", steps=WARMUP + TIMED,
                                    warmup=str(WARMUP), event_fd=f.fileno())
        subprocess.run([sys.executable, "-m", "tuimon.runner"], cwd=ROOT, check=True,
                       pass_fds=(f.fileno(),), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       env={**env, **settings.environ()})
    with open(events_path) as f:
        events = [json.loads(line) for line in f]
    ms = [e["ms"] for e in events if e["type"] == "step" and e["i"] >= WARMUP]
    threads = next(e["threads"] for e in events if e["type"] == "run_started")
    assert len(ms) == TIMED, (events_path, len(ms))
    return {"mean": statistics.mean(ms), "median": statistics.median(ms), "threads": threads,
            "faults": step_faults(record), "where": str(events_path)}


# --- B: timm's benchmark.py --------------------------------------------------------------------

def one_timm(path: str) -> dict:
    """In a fresh process: benchmark.py's main(), its clock recorded."""
    import torch

    spec = importlib.util.spec_from_file_location("timm_benchmark", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    stamps: list[float] = []
    faults: list[int] = []

    def timestamp(sync=False):  # benchmark.py's own CPU clock, each reading kept
        t = time.perf_counter()
        stamps.append(t)
        faults.append(minflt())
        return t

    bench.timestamp = timestamp  # read by BenchmarkRunner.__init__ as its time_fn on CPU
    sys.argv = ["benchmark.py", "--bench", "train", "--model", "resnet18", "--img-size", str(SIZE),
                "-b", str(BATCH), "--device", "cpu", "--num-warm-iter", str(WARMUP),
                "--num-bench-iter", str(TIMED)]
    import io
    from contextlib import redirect_stdout

    with redirect_stdout(io.StringIO()) as printed:
        bench.main()
    result = json.loads(printed.getvalue().split("--result\n", 1)[1])
    # Without --detail a step reads the clock twice; warm-up steps, then t_run_start, then the
    # timed steps, then the end of the run.
    timed = slice(2 * WARMUP + 1, 2 * WARMUP + 1 + 2 * TIMED)
    t, f = stamps[timed], faults[timed]
    ms = [(b - a) * 1000.0 for a, b in zip(t[::2], t[1::2], strict=True)]
    assert abs(statistics.mean(ms) - result["train_step_time"]) < 0.01, (ms, result)
    return {"mean": result["train_step_time"], "median": statistics.median(ms),
            "threads": torch.get_num_threads(),
            "faults": statistics.median(b - a for a, b in zip(f[::2], f[1::2], strict=True))}


# --- C: torch.utils.benchmark.Timer on tuimon's step -------------------------------------------

def build_trainer(extra: dict | None = None, classes: int | None = None):
    """The recipe built as ``python -m tuimon.runner`` builds it (runner/__main__.py)."""
    import torch

    sys.path.insert(0, str(ROOT))
    from tuimon import recipe as contract
    from tuimon.runner.seeding import seed_everything
    from tuimon.runner.steps import BatchCycle
    from tuimon.runner.trainer import Trainer

    module = contract.load_module(RECIPE)
    extra = dict(extra or {})
    if classes is not None:
        extra["classes"] = str(classes)
    cfg = contract.Config(device="cpu", batch_size=BATCH, image_size=SIZE, seed=0, extra=extra)
    seed_everything(torch, 0)
    recipe = contract.validate(module.build(cfg), RECIPE)
    recipe.model.to("cpu")
    recipe.model.train()
    return Trainer(recipe, "cpu"), BatchCycle(recipe.batches).next


def one_timer() -> dict:
    import torch
    from torch.utils.benchmark import Timer

    trainer, next_batch = build_trainer()
    step = trainer.step

    def tuimon_step():  # what tuimon's clock holds on CPU (runner/recipe_loop.py's plain path)
        float(step(next_batch()))

    for _ in range(WARMUP - 2):
        tuimon_step()
    # timeit(number) runs max(number // 100, 2) = 2 warm-up calls itself, then number timed.
    before = minflt()
    m = Timer("tuimon_step()", globals={"tuimon_step": tuimon_step},
              num_threads=torch.get_num_threads()).timeit(TIMED)
    # One block of 25: Timer's median is that block's mean, so there is no step median here;
    # the faults are the mean over its 27 calls.
    return {"mean": m.mean * 1000.0, "median": None, "threads": torch.get_num_threads(),
            "faults": (minflt() - before) / (TIMED + 2)}


def in_child(method: str, benchmark: str) -> dict:
    cmd = [sys.executable, __file__, "--child", method, "--benchmark", benchmark]
    out = subprocess.run(cmd, cwd=ROOT, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


# A: tuimon, B: timm, C: Timer; the rest only with --also.
METHODS = {
    "tuimon": lambda out, bench: run_tuimon(out),
    "timm": lambda out, bench: in_child("timm", bench),
    "timer": lambda out, bench: in_child("timer", bench),
    "runner": lambda out, bench: run_runner(out),  # tuimon's runner without its supervisor
    "tuimon-plain": lambda out, bench: run_tuimon(out, ("opt=plain",)),  # SGD without momentum
    "tuimon-plain10": lambda out, bench: run_tuimon(out, ("opt=plain", "classes=10")),
}


def three_way(rounds: int, benchmark: str, also: list[str]) -> None:
    out = Path(tempfile.mkdtemp(prefix="timm-agreement-"))
    methods = ["tuimon", "timm", "timer", *also]
    rows: list[dict] = []
    print(f"sessions in {out}; torch threads by default here: ", end="")
    import torch

    print(torch.get_num_threads(), flush=True)
    for r in range(rounds):
        k = r % len(methods)
        for method in methods[k:] + methods[:k]:  # the order rotates from round to round
            load = machine_load()
            t = time.perf_counter()
            res = METHODS[method](out, benchmark)
            wall = time.perf_counter() - t
            res.update(round=r + 1, method=method, load_before=load, load_after=machine_load(),
                       wall_s=round(wall, 1))
            rows.append(res)
            med = "       -" if res["median"] is None else f"{res['median']:8.2f}"
            print(f"round {r + 1} {method:14s} mean {res['mean']:8.2f} ms  median {med} ms  faults/step "
                  f"{res['faults']:6.0f}  threads {res['threads']}  [{load} -> {res['load_after']}]  "
                  f"{wall:.0f} s", flush=True)
    print("\nratios in each round (means):")
    for r in range(rounds):
        got = {x["method"]: x["mean"] for x in rows if x["round"] == r + 1}
        others = " ".join(f"{m}/timm {got[m] / got['timm']:.3f}" for m in methods if m != "timm")
        print(f"round {r + 1}: {others}")
    for method in methods:
        means = [x["mean"] for x in rows if x["method"] == method]
        print(f"{method:14s} means: min {min(means):.1f}  median {statistics.median(means):.1f}  "
              f"max {max(means):.1f} ms")
    print(json.dumps(rows))


# --- components, in one process ----------------------------------------------------------------

def components(steps: int) -> None:
    import torch

    print(f"threads {torch.get_num_threads()}; {machine_load()}", flush=True)
    setups = {}
    # tuimon's timed region on the timm-matched recipe.
    trainer, next_batch = build_trainer()
    setups["tuimon step (Nesterov SGD, 1000 classes)"] = lambda t=trainer, n=next_batch: float(
        t.step(n()))

    # benchmark.py's TrainBenchmarkRunner._step on its own copy of the same model and optimizer.
    bt, _ = build_trainer()
    model, opt = bt.recipe.model, bt.recipe.optimizer
    loss_fn = torch.nn.CrossEntropyLoss()
    example = torch.randn(BATCH, 3, SIZE, SIZE)

    def timm_step(model=model, opt=opt):
        output = model(example)
        target = torch.empty((output.shape[0],), dtype=torch.long).random_(1000)
        loss_fn(output, target).backward()
        opt.step()

    setups["benchmark.py step (same work)"] = ("pre", lambda o=opt: o.zero_grad(), timm_step)

    # tuimon's step with the choices of a hand-written recipe.
    for label, extra, classes in (("tuimon step, plain SGD (no momentum)", {"opt": "plain"}, None),
                                  ("tuimon step, 10-class head", {}, 10),
                                  ("tuimon step, plain SGD + 10-class head", {"opt": "plain"}, 10)):
        tr, nb = build_trainer(extra, classes)
        setups[label] = lambda t=tr, n=nb: float(t.step(n()))

    times: dict[str, list[float]] = {k: [] for k in setups}
    perf = time.perf_counter
    for _ in range(steps):
        for label, fn in setups.items():  # alternate step by step: the same machine for each
            if isinstance(fn, tuple):
                _, outside, fn = fn
                outside()
            t = perf()
            fn()
            times[label].append((perf() - t) * 1000.0)
    print(f"{steps} steps each, alternating step by step; first {WARMUP} dropped; {machine_load()}")
    base = times["tuimon step (Nesterov SGD, 1000 classes)"][WARMUP:]
    for label, ms in times.items():
        ms = ms[WARMUP:]
        # Each step against tuimon's step of the same round (neighbours in time): the median of
        # those ratios resists the load that comes and goes better than a ratio of medians.
        ratio = statistics.median(x / b for x, b in zip(ms, base, strict=True))
        print(f"{label:42s} median {statistics.median(ms):8.2f}  min {min(ms):8.2f}  mean "
              f"{statistics.mean(ms):8.2f} ms   x tuimon's step: {ratio:.3f}")

    # The optimizer step alone, on the same gradients, alternating: Nesterov momentum vs plain.
    params = list(trainer.recipe.model.parameters())
    labels = torch.zeros(BATCH, dtype=torch.long)
    trainer.recipe.loss_fn(trainer.recipe.model(example), labels).backward()
    opts = {"SGD(lr, momentum=0.9, nesterov=True).step()":
            torch.optim.SGD(params, lr=1e-4, momentum=0.9, nesterov=True),
            "SGD(lr).step()": torch.optim.SGD(params, lr=1e-4),
            "zero_grad(set_to_none=True)": None}
    alone: dict[str, list[float]] = {k: [] for k in opts}
    for _ in range(steps):
        for label, o in opts.items():
            if o is None:  # frees a set of gradients (copies, so the next step has its own)
                kept = [p.grad for p in params]
                for p in params:
                    p.grad = p.grad.clone()
                t = perf()
                trainer.recipe.optimizer.zero_grad(set_to_none=True)
                alone[label].append((perf() - t) * 1000.0)
                for p, g in zip(params, kept, strict=True):
                    p.grad = g
                continue
            t = perf()
            o.step()
            alone[label].append((perf() - t) * 1000.0)
    print(f"alone, {steps} times each, alternating; first {WARMUP} dropped; {machine_load()}")
    for label, ms in alone.items():
        ms = ms[WARMUP:]
        print(f"{label:42s} median {statistics.median(ms):8.2f}  min {min(ms):8.2f} ms")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=4)
    p.add_argument("--benchmark", default=os.environ.get("TIMM_BENCHMARK", "/tmp/timm_benchmark.py"),
                   help="timm's benchmark.py (not in the wheel; see the module docstring)")
    p.add_argument("--also", default="", help="more methods, comma-separated: runner (the runner "
                   "without its supervisor), tuimon-plain (--set opt=plain), tuimon-plain10 (and "
                   "--set classes=10)")
    p.add_argument("--pin-malloc", action="store_true",
                   help=f"fix glibc malloc's mmap and trim thresholds in every process ({PIN})")
    p.add_argument("--tuimon-flags", default="", help="more options for tuimon's runs, as one "
                   "string (e.g. '--repeats 1 --pin-malloc'); none: tuimon's defaults")
    p.add_argument("--components", action="store_true")
    p.add_argument("--steps", type=int, default=60, help="--components: steps per setup")
    p.add_argument("--child", choices=("timm", "timer"), help=argparse.SUPPRESS)
    args = p.parse_args()
    TUIMON_FLAGS[:] = args.tuimon_flags.split()
    if args.pin_malloc:  # every child inherits it: tuimon's runner through its supervisor too
        os.environ.update(dict(kv.split("=") for kv in PIN.split()))
    if args.child:
        res = one_timm(args.benchmark) if args.child == "timm" else one_timer()
        print(json.dumps(res))
    elif args.components:
        components(args.steps)
    else:
        if not Path(args.benchmark).is_file():
            sys.exit(f"no benchmark.py at {args.benchmark} (see this script's docstring)")
        three_way(args.rounds, args.benchmark, [m for m in args.also.split(",") if m])


if __name__ == "__main__":
    main()
