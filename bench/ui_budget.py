"""The TUI's budget, measured as a user meets it: the UI in its own process, attached to a session
that another process writes, typed at through a real terminal. Run by hand:

    .venv/bin/python bench/ui_budget.py [--rate 1000] [--runs 4] [--seconds 15] [--size 160x45]
                                        [--view panels|overlay] [--keys 12] [--gpu]

1. a writer process (this file, ``writer``) creates a session directory, serves its control
   socket as a daemon does (control/channel.py) and appends to events.jsonl what 4 runners at
   ``--rate`` steps/s would (a batch every 0.25 s each, as runner flushes, each step with its
   phases, so the panels' phase bars are drawn; the compiled runs
   first compile for 3 s with live compile phases; probe samples every 0.5 s, with synthetic
   GPUs under --gpu);
2. the UI process (this file, ``ui``) opens the session as ``tuimon attach`` does (RemoteSource,
   TuimonApp) inside tmux, and records the duration of every redraw: the timer's tick (events
   folded into the model, widgets updated) plus the screen refreshes it caused (drawing and
   writing to the terminal);
3. the driver measures the UI process's CPU (psutil, user + system) over ``--seconds`` with
   every chart on screen, then the key latency: ``o`` sent with tmux send-keys, then
   capture-pane polled until the overlay's title shows (and ``o`` again until it is gone).

``--base DIR``: run the UI side from another checkout (e.g. ``git archive 3c6b104 | tar -x -C
DIR``) for a before/after comparison; its keys are not measured (that version has no ``o``).
``--fps``: the UI's redraw rate; ``--gc``: an A/B experiment on the garbage collector (applied
before the app's own setting); ``--keep DIR``: keep the UI's per-redraw timings;
``--profile FILE``: a cProfile of the UI process (slows it down: not for the figures).
Reported: CPU %, redraws (all of the streaming window, and those that recomputed the numbers),
the garbage collector's pauses, key latency; ``--repeat N`` adds the medians of N runs.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import math
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parent.parent
RUNS = [("eager", "fp32"), ("default", "fp32"), ("eager", "amp"), ("default", "amp")]
PHASES = ["dynamo trace", "aot autograd", "inductor lowering", "inductor codegen", "C++/Triton compile"]


# ---- the writer: a session written by another process ------------------------------------------
class Stub:
    """What the daemon's supervisor answers over the socket; the runs are synthetic."""

    store_error = None

    def states(self) -> dict:
        return {}

    def pause(self, run: str) -> None:
        pass

    def resume(self, run: str) -> None:
        pass


def writer(path: Path, rate: float, runs: int, seconds: float, gpu: bool) -> None:
    from tuimon import events
    from tuimon.control import channel
    from tuimon.sessiondir.store import SessionStore

    store = SessionStore(path)
    store.write_meta({"status": "running", "owner": {"pid": os.getpid(), "host": os.uname().nodename},
                      "name": "ui-budget"})
    server = channel.Server(path, Stub())
    server.start()
    rng = random.Random(0)
    names = [f"{m}-{p}" for m, p in RUNS[:runs]]
    batch = [events.make(events.SESSION_STARTED)]
    for name, (mode, precision) in zip(names, RUNS, strict=False):
        batch += [events.make(events.RUN_QUEUED, name, mode=mode, precision=precision),
                  events.make(events.RUN_STARTED, name, mode=mode, precision=precision, device="cpu",
                              device_name="synthetic", pid=os.getpid()),
                  events.make(events.PHASE, name, phase="compiling" if mode != "eager" else "warmup",
                              compile_id="0/0")]
    store.append(batch)
    start = time.perf_counter()
    step = dict.fromkeys(names, 0)
    compile_until = start + 3.0
    flushes = 0
    while time.perf_counter() - start < seconds:
        flushes += 1
        now, batch = time.time(), []
        compiling = time.perf_counter() < compile_until
        for name in names:
            if name.startswith("default") and compiling:
                phase = PHASES[min(len(PHASES) - 1, int((time.perf_counter() - start) / 0.6))]
                batch.append(events.make(events.COMPILE_PHASE, name, phase=phase, compile_id="0/0"))
                continue
            n = int(rate * 0.25)
            base = 1.0 if name.startswith("eager") else 0.8
            i0 = step[name]
            for k in range(n):
                i = i0 + k
                ms = base * (1 + 0.05 * rng.random()) * (6 if rng.random() < 0.002 else 1)
                e = {"type": "step", "t": now - (n - k) * 0.001, "run": name, "i": i,
                     "ms": round(ms, 4), "data_ms": 0.01, "n": 32, "loss": 2.0 / (1 + i * 1e-3),
                     "phase": "warmup" if i < 50 else "steady",
                     # the step's phases, as runners send them: the panels' phase bars are on
                     "ph": [10, round(ms * 400), round(ms * 350), round(ms * 200)]}
                if i == 0 and not name.startswith("eager"):
                    e["compile_ms"] = 3000.0
                    e["ms"] = 3001.0
                batch.append(e)
            if i0 == 0:
                batch.append(events.make(events.PHASE, name, phase="warmup"))
            step[name] += n
        if flushes % 2 == 0:  # probe samples every 0.5 s
            devices = [{"index": k, "util_gpu": rng.randint(80, 99), "mem_used": (6 + k) * 2**30,
                        "mem_total": 80 * 2**30, "temp_c": 60 + rng.randint(0, 9), "power_w": 300.0}
                       for k in range(len(names))] if gpu else []
            batch.append(events.make(events.SAMPLE, system={"cpu_percent": 50.0}, devices=devices,
                                     runs={name: {"cpu_percent": 99.0 + rng.random(), "rss": 2**30,
                                                  "gpus": [k] if gpu else []}
                                           for k, name in enumerate(names)}))
        store.append(batch)
        store.tick()
        time.sleep(max(0.0, start + flushes * 0.25 - time.perf_counter()))
    store.append([events.make(events.SESSION_ENDED, status="done")])
    store.sync()
    server.close()


# ---- the UI: tuimon attach, with its redraws timed -------------------------------------------
def ui(path: Path, out: Path) -> None:
    from textual.screen import Screen

    from tuimon.ui.app import TuimonApp
    from tuimon.ui.sources import RemoteSource

    if os.environ.get("UI_BUDGET_GC"):  # an experiment: "freeze" and/or the collector's thresholds
        spec = os.environ["UI_BUDGET_GC"]
        if "freeze" in spec:
            gc.freeze()
        if "," in spec:
            gc.set_threshold(*(int(x) for x in spec.replace("freeze", "").strip(":").split(",")))
    source = RemoteSource(path)
    app = TuimonApp(source, fps=float(os.environ.get("UI_BUDGET_FPS", "4")))
    frames: list[float] = []  # one per tick: the tick plus the refreshes after it (wall ms)
    frames_cpu: list[float] = []  # the same in CPU time of the UI thread (ms)
    ticks: list[float] = []
    stamps: list[list] = []  # per frame: wall clock at its tick, whether the numbers were recomputed
    state = {"frame": None, "cpu": 0.0, "summary_at": None}
    original_tick, original_refresh = app.tick, Screen._compositor_refresh

    def tick() -> None:
        if state["frame"] is not None:
            frames.append(state["frame"])
            frames_cpu.append(state["cpu"])
            if "parts" in state:
                state["frames_parts"].append(state["parts"])
        if "parts" in state:
            state["parts"] = {}
        stamps.append([time.time(), False])
        t, c = time.perf_counter(), time.thread_time()
        original_tick()
        at = getattr(app.model, "_summary_at", None)  # None: a version without it (--base)
        stamps[-1][1] = at is not None and at != state["summary_at"]
        state["summary_at"] = at
        ticks.append((time.perf_counter() - t) * 1000)
        state["frame"], state["cpu"] = ticks[-1], (time.thread_time() - c) * 1000

    def refresh(screen) -> None:
        t, c = time.perf_counter(), time.thread_time()
        original_refresh(screen)
        if state["frame"] is not None:
            state["frame"] += (time.perf_counter() - t) * 1000
            state["cpu"] += (time.thread_time() - c) * 1000

    app.tick = tick
    Screen._compositor_refresh = refresh
    pauses: list[list] = []  # the cyclic garbage collector's pauses: [wall clock, generation, ms]

    def collected(phase: str, info: dict) -> None:
        if phase == "start":
            state["gc"] = time.perf_counter()
        elif state.get("gc") is not None:
            pauses.append([time.time(), info["generation"], (time.perf_counter() - state["gc"]) * 1000])

    gc.callbacks.append(collected)
    if os.environ.get("UI_BUDGET_TRACE"):
        trace(app, state)
    profile = os.environ.get("UI_BUDGET_PROFILE")  # a cProfile of the UI process, to this file
    try:
        if profile:
            import cProfile

            cProfile.runctx("app.run()", globals(), {"app": app}, profile)
        else:
            app.run()
    finally:
        out.write_text(json.dumps({"frames": frames, "frames_cpu": frames_cpu, "ticks": ticks,
                                   "stamps": stamps[:len(frames)], "gc": pauses,
                                   "events": app.model.events_seen,
                                   "parts": state.get("frames_parts", []),
                                   "summaries": state.get("summaries", [])}))


# What a redraw's time is made of (--trace): CPU ms of the UI thread in each named call, per
# redraw (nested calls are counted in their callers too), and the summary thread's runs.
TRACED = [  # (module, attribute path, label)
    ("tuimon.ui.model", "SessionModel.add_all", "fold"),
    ("tuimon.ui.model", "SessionModel.latest_summary", "summary"),
    ("tuimon.ui.views", "Views.draw", "views"),
    ("tuimon.ui.widgets.run_panel", "RunPanel.show", "panel"),
    ("tuimon.ui.widgets.chart", "Chart.plot", "chart"),
    ("tuimon.ui.widgets.chart", "Chart.refresh", "chart.refresh"),
    ("tuimon.ui.widgets.chart", "draw", "draw"),
    ("tuimon.analysis.stats.series", "StepSeries.columns", "columns"),
    ("tuimon.analysis.stats.series", "StepSeries._compact", "compact"),
    ("tuimon.ui.widgets.run_panel", "step_plot", "step_plot"),
    ("tuimon.ui.widgets.run_panel", "loss_plot", "loss_plot"),
    ("tuimon.ui.widgets.comparison", "ComparisonStrip.show", "strip"),
    ("tuimon.ui.widgets.run_panel", "update", "static_update"),
    ("textual.screen", "Screen._refresh_layout", "layout"),
    ("textual.screen", "Screen._compositor_refresh", "textual_refresh"),
    ("textual.app", "App._display", "display"),
    ("textual.screen", "Screen._on_update", "on_update"),
]


def trace(app, state: dict) -> None:
    import importlib
    import threading

    main = threading.get_ident()
    state["parts"], state["frames_parts"], state["summaries"] = {}, [], []

    def wrap(owner, name: str, label: str) -> None:
        inner = getattr(owner, name)
        is_async = asyncio.iscoroutinefunction(inner)

        def timed(*a, **k):
            if threading.get_ident() != main:
                return inner(*a, **k)
            c = time.thread_time()
            try:
                return inner(*a, **k)
            finally:
                parts = state["parts"]
                parts[label] = parts.get(label, 0.0) + (time.thread_time() - c) * 1000
                parts[label + "#"] = parts.get(label + "#", 0) + 1

        async def timed_async(*a, **k):
            c = time.thread_time()
            try:
                return await inner(*a, **k)
            finally:
                parts = state["parts"]
                parts[label] = parts.get(label, 0.0) + (time.thread_time() - c) * 1000

        setattr(owner, name, timed_async if is_async else timed)

    for module, path, label in TRACED:
        owner = importlib.import_module(module)
        *outer, name = path.split(".")
        for attr in outer:
            owner = getattr(owner, attr)
        wrap(owner, name, label)
    from textual.screen import Screen

    on_layout = Screen._on_layout

    async def laid_out(screen, message):  # which widget asked for a layout pass
        w = message.widget
        who = f"{type(w).__name__}#{w.id or ''}.{'.'.join(w.classes)}"
        state["parts"].setdefault("layout_by", []).append(who)
        return await on_layout(screen, message)

    Screen._on_layout = laid_out
    compute = type(app.model)._compute

    def computed(model, now):  # the summary thread: its CPU and wall span
        w, c = time.time(), time.thread_time()
        compute(model, now)
        state["summaries"].append([w, time.time(), (time.thread_time() - c) * 1000])

    type(app.model)._compute = computed


# ---- the driver -----------------------------------------------------------------------------
def tmux(server: str, *args: str) -> str:
    return subprocess.run(["tmux", "-L", server, *args], capture_output=True, text=True).stdout


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(len(s) * q))] if s else float("nan")


def drive(args) -> dict:
    tmp = Path(tempfile.mkdtemp(prefix="ui-budget-"))
    session = tmp / "session"
    session.mkdir(mode=0o700)
    (session / "logs").mkdir()
    server = f"tuimon-budget-{os.getpid()}"
    total = args.seconds + 12 + (args.keys * 1.5 if not args.base else 0)
    gpu = ["--gpu"] if args.gpu else []
    w = subprocess.Popen([sys.executable, __file__, "writer", str(session), "--rate", str(args.rate),
                          "--runs", str(args.runs), "--seconds", str(total), *gpu])
    out = tmp / "ui.json"
    code = Path(args.base).resolve() if args.base else ROOT
    env = f"PYTHONPATH={code} TERM=xterm-256color"
    env += f" UI_BUDGET_FPS={args.fps}" + (f" UI_BUDGET_GC={args.gc}" if args.gc else "")
    if args.profile:
        env += f" UI_BUDGET_PROFILE={Path(args.profile).resolve()}"
    if args.trace:
        env += " UI_BUDGET_TRACE=1"
    width, height = args.size.split("x")
    try:
        for _ in range(100):
            if (session / "control.sock").exists():
                break
            time.sleep(0.05)
        cmd = f"{env} {sys.executable} {Path(__file__).resolve()} ui {session} {out}"
        tmux(server, "new-session", "-d", "-s", "b", "-x", width, "-y", height, cmd)
        screen = lambda: tmux(server, "capture-pane", "-p", "-t", "b")  # noqa: E731
        deadline = time.monotonic() + 30
        while "median" not in screen() and time.monotonic() < deadline:
            time.sleep(0.2)
        pane = int(tmux(server, "list-panes", "-t", "b", "-F", "#{pane_pid}").strip())
        proc = psutil.Process(pane)
        kids = [p for p in proc.children(recursive=True) if "python" in p.name()]
        proc = kids[0] if kids else proc
        if args.view == "overlay":
            tmux(server, "send-keys", "-t", "b", "o")
        time.sleep(5)  # past the compile: every run steps
        load = os.getloadavg()[0]
        c0, t0, w0 = proc.cpu_times(), time.perf_counter(), time.time()
        time.sleep(args.seconds)
        c1, wall, w1 = proc.cpu_times(), time.perf_counter() - t0, time.time()
        cpu = (c1.user + c1.system - c0.user - c0.system) / wall * 100
        latencies = [] if args.base else keys(server, screen, args.keys, args.view)
        tmux(server, "send-keys", "-t", "b", "C-q")
        for _ in range(100):
            if out.exists():
                break
            time.sleep(0.1)
        data = json.loads(out.read_text()) if out.exists() else {}
    finally:
        tmux(server, "kill-server")
        w.terminate()
        w.wait()
        if args.keep and out.exists():
            shutil.copy(out, Path(args.keep) / f"ui-{int(time.time())}.json")
        shutil.rmtree(tmp, ignore_errors=True)
    # The frames of the CPU window (streaming, every chart on screen; no keys typed), and apart
    # the ones that recomputed the numbers (the session summary, once a second or less).
    # A frame is counted when it also ended in the window (the next tick began by w1): the last
    # one's refreshes would otherwise include the first key's.
    stamps = data.get("stamps", [])
    window = [k for k, (t, _) in enumerate(stamps[:-1]) if w0 <= t and stamps[k + 1][0] <= w1]
    frames = [data["frames"][k] for k in window] or [math.nan]
    frames_cpu = [data["frames_cpu"][k] for k in window] or [math.nan]
    plain = [data["frames_cpu"][k] for k in window if not data["stamps"][k][1]] or [math.nan]
    summary = [data["frames_cpu"][k] for k in window if data["stamps"][k][1]] or [math.nan]
    gc_ms = [ms for t, _, ms in data.get("gc", []) if w0 <= t <= w1]
    result = {"load": round(load, 2), "cpu_percent": round(cpu, 1), "events": data.get("events"),
              "frame_median_ms": round(statistics.median(frames), 1),
              "frame_p95_ms": round(pct(frames, 0.95), 1),
              "frame_cpu_median_ms": round(statistics.median(frames_cpu), 1),
              "frame_cpu_p95_ms": round(pct(frames_cpu, 0.95), 1),
              "frames": len(window), "summary_frames": len(summary) if summary != [math.nan] else 0,
              "plain_frame_cpu_p95_ms": round(pct(plain, 0.95), 1),
              "summary_frame_cpu_median_ms": round(statistics.median(summary), 1),
              "gc_ms_per_s": round(sum(gc_ms) / wall, 1), "gc_max_ms": round(max(gc_ms, default=0), 1),
              "key_median_ms": round(statistics.median(latencies)) if latencies else None,
              "key_max_ms": round(max(latencies)) if latencies else None}
    print(json.dumps(result))
    if args.trace and data.get("parts"):
        breakdown(data, window, w0, w1)
    return result


def breakdown(data: dict, window: list[int], w0: float, w1: float) -> None:
    """--trace: each part's mean CPU ms in the window's redraws, and in its slowest 5 %."""
    order = sorted(window, key=lambda k: data["frames_cpu"][k])
    slow = order[-max(1, len(order) // 20):]
    labels = sorted({k for p in data["parts"] for k in p if not k.endswith("#") and k != "layout_by"})
    print(f"{'part':>18} {'all':>7} {'slow 5%':>8}   (CPU ms per redraw; calls per redraw)")
    for label in ["frame_cpu", *labels]:
        def mean(ks, key=label):
            if key == "frame_cpu":
                return sum(data["frames_cpu"][k] for k in ks) / len(ks)
            return sum(data["parts"][k].get(key, 0.0) for k in ks) / len(ks)
        calls = mean(window, label + "#") if label != "frame_cpu" else 0
        print(f"{label:>18} {mean(window):7.2f} {mean(slow):8.2f}   {calls:.1f}")
    print("layout passes asked by:", [data["parts"][k].get("layout_by") for k in window
                                       if data["parts"][k].get("layout_by")])
    spans = [s for s in data.get("summaries", []) if s[1] >= w0 and s[0] <= w1]
    overlap = []
    for k in slow:
        t = data["stamps"][k][0]
        overlap.append(any(a <= t + 0.25 and b >= t for a, b, _ in spans))
    print(f"summary thread: {len(spans)} runs in the window, CPU ms "
          f"{[round(c, 1) for _, _, c in spans]}; slow redraws overlapping one: "
          f"{sum(overlap)}/{len(slow)}; slow redraws' CPU ms "
          f"{[round(data['frames_cpu'][k], 1) for k in slow]}")


def keys(server: str, screen, count: int, view: str) -> list[float]:
    """o, then the overlay's title seen; o again, then it is gone: each a key to the screen."""
    latencies = []
    marker = "step ms by step"
    for k in range(count):
        want_overlay = (k % 2 == 0) != (view == "overlay")
        t = time.perf_counter()
        tmux(server, "send-keys", "-t", "b", "o")
        deadline = t + 5
        while ((marker in screen()) != want_overlay) and time.perf_counter() < deadline:
            time.sleep(0.005)
        latencies.append((time.perf_counter() - t) * 1000)
        time.sleep(0.7)
    return latencies


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "writer":
        p = argparse.ArgumentParser()
        p.add_argument("mode")
        p.add_argument("path")
        p.add_argument("--rate", type=float, default=1000)
        p.add_argument("--runs", type=int, default=4)
        p.add_argument("--seconds", type=float, default=30)
        p.add_argument("--gpu", action="store_true")
        a = p.parse_args()
        sys.path.insert(0, str(ROOT))
        writer(Path(a.path), a.rate, a.runs, a.seconds, a.gpu)
        return
    if len(sys.argv) > 1 and sys.argv[1] == "ui":
        ui(Path(sys.argv[2]), Path(sys.argv[3]))
        return
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rate", type=float, default=1000)
    p.add_argument("--runs", type=int, default=4)
    p.add_argument("--seconds", type=float, default=15)
    p.add_argument("--size", default="160x45")
    p.add_argument("--view", choices=("panels", "overlay"), default="panels")
    p.add_argument("--keys", type=int, default=12)
    p.add_argument("--gpu", action="store_true")
    p.add_argument("--base", help="run the UI side from this checkout (before/after)")
    p.add_argument("--repeat", type=int, default=1)
    p.add_argument("--fps", type=float, default=4.0, help="the UI's redraws a second (--fps)")
    p.add_argument("--gc", help="an experiment: 'freeze', thresholds '10000,20,50', or 'freeze:10000,20,50'")
    p.add_argument("--keep", help="keep the UI's frame timings (JSON) in this directory")
    p.add_argument("--profile", help="write a cProfile of the UI process here")
    p.add_argument("--trace", action="store_true",
                   help="time the parts of each redraw (CPU ms): the mean, and in the slowest 5 %%")
    args = p.parse_args()
    print(f"machine: {os.cpu_count()} cores; Python {sys.version.split()[0]}; {vars(args)}")
    results = [drive(args) for _ in range(args.repeat)]
    if len(results) > 1:
        med = {k: statistics.median(r[k] for r in results if r[k] is not None)
               for k in results[0] if any(r[k] is not None for r in results)}
        print("median of", len(results), json.dumps(med))


if __name__ == "__main__":
    main()
