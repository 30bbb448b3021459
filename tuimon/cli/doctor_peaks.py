"""``tuimon doctor``'s peaks: this machine's measured GEMM peak per dtype (runner/peak_bench.py,
asked of a child: the doctor never imports torch), as the runs' MFU uses it, and each GPU's
datasheet dense peaks from tuimon's table (tuimon/peaks.py), by the name NVML gives.

Plain ``tuimon doctor`` writes nothing: it shows the cached measurement, or says none was made
yet; ``tuimon doctor --peak`` measures it (a few seconds) and keeps it where the runs find it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tuimon.peaks import PRECISIONS, find

PEAK_TIMEOUT_S = 300.0  # importing torch, then a few seconds of GEMMs a dtype


def peak_report(torch: dict, measure: bool, timeout: float = PEAK_TIMEOUT_S) -> dict:
    """The child's answer: {peaks, key, cached, measured_at, seconds, ...}, None (not measured
    yet) or {error}; nothing when torch could not be asked."""
    if not (torch or {}).get("ok"):
        return {"error": "torch could not be asked"}
    device = "cuda" if torch.get("cuda_available") else "cpu"
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parent.parent.parent)  # the child finds this very tuimon
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    argv = [sys.executable, "-m", "tuimon.runner.peak_bench", "--device", device]
    argv.append("--fresh" if measure else "--cached-only")
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env,
                              stdin=subprocess.DEVNULL)
        found = json.loads(proc.stdout.strip().splitlines()[-1])
    except subprocess.TimeoutExpired:
        return {"device": device, "error": f"measuring took over {timeout:g} s (killed)"}
    except (OSError, IndexError, ValueError) as exc:
        return {"device": device, "error": f"the peak's child failed: {exc}"}
    return {"device": device, "entry": found}


def _tflops(x: float) -> str:
    return f"{x / 1e12:.3g} TFLOP/s" if x >= 1e12 else f"{x / 1e9:.3g} GFLOP/s"


def peak_rows(peak: dict, gpus: list[dict]) -> list[tuple[str, str]]:
    out = []
    entry = (peak or {}).get("entry")
    if error := peak.get("error") or (entry or {}).get("error"):
        out.append(("measured peak", f"n/a: {error}"))
    elif entry is None:
        out.append(("measured peak", "not measured yet on this machine and torch: "
                    "`tuimon doctor --peak` measures it (seconds), or a run's first FLOP count does"))
    else:
        figures = ", ".join(f"{k} {_tflops(v)}" for k, v in entry["peaks"].items())
        how = f"GEMMs on {peak['device']}"
        if entry.get("per_thread"):
            how += f", {entry['threads']} threads (the larger of all of them and one × {entry['threads']})"
        out.append(("measured peak", f"{figures} ({how}; {entry.get('measured_at', '?')}, "
                    f"{'cached' if entry.get('cached') else 'measured now'})"))
    for d in gpus:
        hit = find(d.get("name"))
        text = (f"{hit[0]}: " + ", ".join(f"{p} {hit[1][p]:g}" for p in PRECISIONS if p in hit[1])
                + " TFLOP/s dense" if hit else
                f"{d.get('name') or '?'} is not in tuimon's table: MFU uses the measured peak")
        out.append((f"GPU {d['index']} datasheet", text))
    return out
