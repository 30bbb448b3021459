"""NVML for real: python3 bench/gpu/nvml_check.py --json PATH [--seconds S] [--device cuda|cpu]

tuimon's GPU probe (tuimon/probes/gpu.py, the one the supervisor samples) on this machine's NVML,
while a child process loads the GPU with matrix products: every device metric (utilisation,
memory, temperature, power and its limit, SM and memory clocks, fan, throttle reasons), the
child's own GPU memory and SM % as tuimon attributes them to a run (by pid), what NVML does not
support here, and what one sample costs (the supervisor takes one a second by default).
With no GPU, or with tests/fake_nvml on PYTHONPATH (the dry run), it says what it found.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tuimon.probes.gpu import GpuProbe  # noqa: E402

LOAD = """
import sys, time
dev, seconds = sys.argv[1], float(sys.argv[2])
if dev == "none":  # the dry run: a process to attribute, no work
    time.sleep(seconds)
    sys.exit()
import torch
n = 8192 if dev == "cuda" else 256
x = torch.randn(n, n, device=dev)
end = time.time() + seconds
while time.time() < end:
    y = x @ x
    if dev == "cuda":
        torch.cuda.synchronize()
"""
METRICS = ("util_gpu", "util_mem", "mem_used", "mem_total", "temp_c", "power_w", "power_limit_w",
           "clock_sm_mhz", "clock_mem_mhz", "fan_percent")


def cost(probe: GpuProbe, runs: dict, n: int) -> dict:
    times = []
    for _ in range(n):
        t = time.perf_counter()
        probe.sample(runs)
        times.append((time.perf_counter() - t) * 1000)
    times.sort()
    return {"samples": n, "median_ms": round(statistics.median(times), 3),
            "p90_ms": round(times[int(0.9 * (n - 1))], 3), "max_ms": round(times[-1], 3)}


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--json", required=True)
    p.add_argument("--seconds", type=float, default=12.0, help="how long the load runs")
    p.add_argument("--samples", type=int, default=100, help="samples timed for the cost")
    p.add_argument("--device", default=None,
                   help="where the load runs: cuda, cpu, none (a sleeping process; default: cuda if there)")
    a = p.parse_args()
    probe = GpuProbe()
    out: dict = {"available": probe.available, "reason": probe.reason, "devices": probe.devices}
    if probe.available:
        out["idle"] = probe.sample()
        device = a.device or ("cuda" if _cuda() else "cpu")
        load = subprocess.Popen([sys.executable, "-c", LOAD, device, str(a.seconds)])
        runs = {"load": [load.pid]}
        samples, end = [], time.time() + a.seconds * 0.6
        time.sleep(min(2.0, a.seconds / 4))  # the load's CUDA context and first products
        while time.time() < end:
            samples.append(probe.sample(runs))
            time.sleep(0.5)
        out["cost_per_sample"] = cost(probe, runs, a.samples)
        load.wait()
        out.update(summarise(samples, device, load.pid))
        out["unsupported"] = sorted(probe.unsupported)
        probe.close()
    Path(a.json).write_text(json.dumps(out, indent=1, default=str) + "\n", encoding="utf-8")
    print(json.dumps({k: v for k, v in out.items() if k not in ("idle", "last")}, indent=1, default=str))


def summarise(samples: list[dict], device: str, pid: int) -> dict:
    """Per metric over the samples under load: the maximum (and whether it was ever read)."""
    per_metric = {}
    for m in METRICS:
        values = [d[m] for s in samples for d in s["devices"] if d.get(m) is not None]
        per_metric[m] = max(values) if values else None
    reasons = sorted({r for s in samples for d in s["devices"] for r in d.get("throttle_reasons") or []})
    mems = [s["runs"]["load"]["gpu_mem"] for s in samples if s["runs"]["load"]["gpu_mem"] is not None]
    sms = [s["runs"]["load"]["sm_util"] for s in samples if s["runs"]["load"]["sm_util"] is not None]
    errors = sorted({f"{k}: {v}" for s in samples for k, v in s["errors"].items()})
    return {"load_device": device, "load_pid": pid, "samples_under_load": len(samples),
            "energy": energy(samples),
            "max_under_load": per_metric, "throttle_reasons_seen": reasons,
            "load_gpu_mem_max": max(mems) if mems else None, "load_sm_util_max": max(sms) if sms else None,
            "errors": errors, "last": samples[-1] if samples else None}


def energy(samples: list[dict]) -> dict:
    """Device 0's energy over the samples under load: NVML's counter (mJ → J) beside power × time
    (each period at the mean of its ends' draw), the two ways tuimon finds a run's (issue 35)."""
    points = [(s["t"], s["devices"][0].get("energy_mj"), s["devices"][0].get("power_w"))
              for s in samples if s.get("devices")]
    out: dict = {"counter_j": None, "power_time_j": None, "seconds": None}
    if len(points) < 2:
        return out
    out["seconds"] = round(points[-1][0] - points[0][0], 3)
    if points[0][1] is not None and points[-1][1] is not None:
        out["counter_j"] = round((points[-1][1] - points[0][1]) / 1000.0, 3)
    if all(p[2] is not None for p in points):
        out["power_time_j"] = round(sum((a[2] + b[2]) / 2 * (b[0] - a[0])
                                        for a, b in zip(points, points[1:], strict=False)), 3)
    return out


def _cuda() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


if __name__ == "__main__":
    main()
