"""Deterministic sessions for chart tests and snapshots: fixed clocks, seeded noise.

``session(tmp, name, steps=..., ...)`` writes a session directory (events.jsonl + meta.json)
of an eager run and a compiled run that take turns (interleaved), with warm-up steps, a compile
step, outliers, losses and, with ``gpu``, probe samples carrying two synthetic GPUs.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

T0 = 1_800_000_000.0
# Shares of a step: data, forward, backward, optimizer (the rest is other).
EAGER_SPLIT = (0.02, 0.44, 0.36, 0.14)
COMPILED_SPLIT = (0.03, 0.33, 0.38, 0.21)


def run_events(run: str, mode: str, steps: int, base_ms: float, rng: random.Random, *, t0: float,
               compile_ms: float = 0.0, outliers: tuple[int, ...] = (), turn: int = 0) -> list[dict]:
    """A run's events from ``t0``; with ``turn`` > 0 it waits a turn (as long as it stepped)
    after every ``turn`` steps."""
    evs = [{"type": "run_queued", "t": t0, "run": run, "mode": mode, "precision": "fp32"},
           {"type": "run_started", "t": t0, "run": run, "mode": mode, "precision": "fp32",
            "device": "cpu", "device_name": "synthetic CPU"},
           {"type": "phase", "t": t0, "run": run, "phase": "warmup"}]
    t = t0
    turn_start = t
    for i in range(steps):
        ms = base_ms * (1 + 0.08 * rng.random())
        if i in outliers:
            ms = base_ms * 10
        step = {"type": "step", "t": 0.0, "run": run, "i": i, "ms": round(ms, 4), "data_ms": 0.01,
                "n": 32, "loss": round(2.3 / (1 + i / 20) + 0.01 * rng.random(), 5),
                "phase": "warmup" if i < 5 else "steady"}
        # Where the step goes (issue 25): compile shrinks forward and backward, not the rest.
        split = EAGER_SPLIT if mode == "eager" else COMPILED_SPLIT
        step["ph"] = [round(share * ms * 1000) for share in split]
        if i == 0 and compile_ms:
            step["compile_ms"] = compile_ms
            step["ms"] = round(compile_ms + ms, 4)
        t += step["ms"] / 1000.0
        step["t"] = round(t, 6)
        evs.append(step)
        if i == 4:
            evs.append({"type": "phase", "t": round(t, 6), "run": run, "phase": "steady"})
        if turn and (i + 1) % turn == 0 and i + 1 < steps:
            wait = t - turn_start
            evs.append({"type": "phase", "t": round(t, 6), "run": run, "phase": "paused", "turn": True})
            t += wait
            evs.append({"type": "phase", "t": round(t, 6), "run": run, "phase": "steady"})
            turn_start = t
    evs.append({"type": "finished", "t": round(t + 0.01, 6), "run": run, "reason": "steps"})
    return evs


def samples(t0: float, t1: float, runs: list[str], gpu: bool, rng: random.Random) -> list[dict]:
    out = []
    t = t0
    while t < t1:
        t += 0.05
        devices = [{"index": k, "util_gpu": 70 + k * 15 + rng.randint(0, 9), "mem_used": (3 + 2 * k) * 2**30,
                    "mem_total": 24 * 2**30, "temp_c": 55 + 8 * k + rng.randint(0, 3), "power_w": 200.0}
                   for k in range(len(runs))] if gpu else []
        out.append({"type": "sample", "t": round(t, 6), "system": {"cpu_percent": 50.0},
                    "devices": devices,
                    "runs": {run: {"cpu_percent": 95.0 + 3 * k + rng.random(), "rss": 2**30,
                                   "gpus": [k] if gpu else []} for k, run in enumerate(runs)}})
    return out


def session(tmp: Path, name: str, steps: int = 300, *, gpu: bool = False, outliers: tuple = (),
            turn: int = 0) -> Path:
    rng = random.Random(7)
    path = tmp / name
    path.mkdir(parents=True)
    (path / "logs").mkdir()
    eager = run_events("eager-fp32", "eager", steps, 0.5, rng, t0=T0, outliers=outliers, turn=turn)
    compiled = run_events("default-fp32", "default", steps, 0.4, rng, t0=T0 + 0.001,
                          compile_ms=steps * 0.6, outliers=outliers, turn=turn)
    evs = sorted(eager + compiled, key=lambda e: e["t"])
    end = max(e["t"] for e in evs)
    evs += samples(T0, end, ["eager-fp32", "default-fp32"], gpu, rng)
    evs.sort(key=lambda e: e["t"])
    evs.insert(0, {"type": "session_started", "t": T0})
    evs.append({"type": "session_ended", "t": end + 0.02, "status": "done"})
    (path / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in evs))
    (path / "meta.json").write_text(json.dumps({"status": "done", "name": name}))
    return path
